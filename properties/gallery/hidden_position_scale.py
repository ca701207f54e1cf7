"""Pitfall: hidden unit j scaled by its position — the hidden units are no longer interchangeable.

The mistake: y = W_down (s ⊙ silu(W_gate x) ⊙ W_up x) with s_j = 1 + j/F: a per-position factor, as a
misaligned chunk of a fused gate/up buffer or a per-channel scale (from quantisation) applied with the
wrong index would give.

Why people make it: fused kernels index hidden units by position (chunks, tiles, channel scales); an
off-by-a-stride bug leaves every shape right and the output plausible.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: SwiGLU.swiglu_is_invariant_to_hidden_permutation — permuting the F hidden units (rows of W_gate,
W_up and columns of W_down alike) must leave y unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: y = W_down (s ⊙ silu(W_gate x) ⊙ W_up x), s_j = 1 + j/F."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.w_gate(x)) * self.w_up(x)  # (..., F)
        scale = 1 + torch.arange(h.shape[-1], dtype=h.dtype, device=h.device) / h.shape[-1]  # the bug
        return self.w_down(h * scale)
