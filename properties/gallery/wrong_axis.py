"""Pitfall: normalising over the wrong axes — one root-mean-square for the whole (T, D) slab.

The mistake: ms = mean(x², dim=(−2, −1)) (or a norm over dim=(1, 2) of a (B, T, D) activation)
instead of ms = mean(x², dim=−1): every token is divided by a statistic of all tokens.

Why people make it: written against a (B, T, D) tensor with "normalise everything but the batch"
in mind, or copied from an image-model norm; the output still has unit RMS *on average*, so a
check of the overall scale passes.

Evidence: bkitano/llama-from-scratch#4, kyegomez/zeta#180.

Caught by: RMSNorm.rmsnorm_rows_are_independent — changing one row must not change any other row.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x / sqrt(mean(x², dim=(−2, −1)) + eps) ⊙ w (one statistic per (T, D) slab)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        axes = (-2, -1) if x.dim() >= 2 else (-1,)  # the bug: the token axis is reduced too
        r = torch.rsqrt(xc.pow(2).mean(dim=axes, keepdim=True) + self.eps)
        return (xc * r * self.weight.to(xc.dtype)).to(x.dtype)
