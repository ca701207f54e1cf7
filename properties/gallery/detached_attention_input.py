"""Pitfall: the attention branch reads a detached norm(x) — values right, part of ∂out/∂x missing.

The mistake: h = x + attn(attn_norm(x).detach()): the forward value is exact; the gradient through the
attention branch stops at the norm's output, so ∂out/∂x and ∂out/∂γ₁ (the first norm's gain) are wrong.

Why people make it: ``.detach()`` is added to work around an autograd error or while debugging, or a
custom kernel saves its input without the graph; forward tests pass.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: Block.block_gradients_pass_gradcheck — in fp64 the analytical Jacobian (x and every weight) must
agree with finite differences.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """Correct values; WRONG: the attention branch reads attn_norm(x).detach()."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.attn_norm(x).detach())  # the bug: the gradient path into the branch is cut
        return h + self.ffn(self.ffn_norm(h))
