"""Pitfall: no eps at all — a zero (padding) row gives 0 · ∞ = NaN.

The mistake: y = x · rsqrt(mean(x²)) ⊙ w. For a row of zeros rsqrt(0) = ∞ and 0 · ∞ = NaN; the
NaN then spreads through attention to every token that attends to the padding.

Why people make it: eps looks like a cosmetic constant, random test rows never have a zero RMS,
and the same happens when eps is present but lost to rounding (added in a dtype where it
underflows, or set to 0 through a config default).

Evidence: deepspeedai/DeepSpeed#581, huggingface/diffusers#13316.

Caught by: RMSNorm.rmsnorm_maps_zero_row_to_zeros — RMSNorm(0) = 0 exactly, never NaN.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x · rsqrt(mean(x²)) ⊙ w — eps is stored but never added."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True))  # the bug: "+ self.eps" is missing
        return (xc * r * self.weight.to(xc.dtype)).to(x.dtype)
