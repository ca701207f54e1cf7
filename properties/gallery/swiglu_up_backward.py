"""Pitfall: no gradient through the up projection — W_up and x lose that part of their gradient.

The mistake: the up projection's value is used but detached from the graph (a hand-written backward that
returns zero for it, or a ``.detach()`` left from debugging): y is exact, ∂y/∂W_up = 0 and ∂y/∂x misses
the W_up path.

Why people make it: fused SwiGLU kernels write the backward by hand and must route the gradient to both
operands of the product; forward tests, the only ones most people write, pass.

Evidence: none known for this term; hand-written SwiGLU backwards are error-prone (linkedin/Liger-Kernel#370).
Kept as a test-only mutation.

Caught by: SwiGLU.swiglu_gradients_pass_gradcheck — in fp64 the analytical Jacobian (x and the three
weights) must agree with finite differences.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """Correct forward y = W_down (silu(W_gate x) ⊙ W_up x); WRONG: no gradient through W_up x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        up = self.w_up(x)
        return self.w_down(F.silu(self.w_gate(x)) * (up.detach() + 0 * up))  # the bug: value right, gradient 0
