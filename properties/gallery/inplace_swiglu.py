"""Pitfall: the input buffer reused as scratch — the output is right, the caller's x is not.

The mistake: after the FFN has read x, the kernel reuses x's memory for an intermediate (here: halves it
in place). The returned y is exact; the caller's activation — in a block, the residual stream — is
silently changed.

Why people make it: memory-saving kernels reuse buffers they believe are dead; inference runs under
``no_grad``, where autograd's in-place checks never fire.

Evidence: none known for the FFN; in-place buffer reuse in fused kernels bit linkedin/Liger-Kernel#370 and
unslothai/unsloth#4550. Kept as a test-only mutation.

Caught by: SwiGLU.swiglu_does_not_modify_input — x and the three weights are bitwise unchanged after the call.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """Correct y = W_down (silu(W_gate x) ⊙ W_up x); WRONG: x is halved in place afterwards."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        x.mul_(0.5)  # the bug: the caller's buffer used as scratch
        return y
