"""Pitfall: tokens leak into each other — each token is mixed with its neighbour before the FFN.

The mistake: y_t = SwiGLU(x_t + x_{t−1}/4) (cyclically): a ``roll`` or a reduction over the wrong axis
(tokens instead of features) makes a position-wise FFN depend on other tokens.

Why people make it: (B, T, D) tensors are reshaped, transposed and rolled in fused kernels and in
sequence-parallel code; one wrong ``dims=`` mixes tokens and the shapes stay right.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: SwiGLU.swiglu_tokens_are_independent — redrawing every other token must not move token i's
output beyond 2·bound.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: y_t = SwiGLU(x_t + x_{t−1}/4) along the token axis (−2)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() >= 2 and x.shape[-2] > 1:
            x = x + 0.25 * x.roll(1, dims=-2)  # the bug: the neighbouring token leaks in
        return super().forward(x)
