"""Pitfall: computing the norm in bf16 — the sum of squares is accumulated in 8 significant bits.

The mistake: the reduction runs in the storage dtype. s = ((x₁² + x₂²) + x₃²) + … with every square
and partial sum rounded to bf16; the rest, y = x · rsqrt(s/D + eps) ⊙ w, is done in fp32 and rounded
once, exactly as in the reference. Once s ≈ 256 a bf16 step is 2, so adding x_i² ≈ 1 changes nothing
("stagnation"): the error grows with D, to hundreds of ULPs (tens of percent) at D = 4096.

Why people make it: the model runs in bf16, so the obvious code runs in bf16; on a CPU test it
even looks right, because torch's own bf16 ``sum``/``mean`` accumulate in fp32 internally. A GPU
kernel that accumulates in the storage dtype (or a hand-written loop, as here) does not.
This module writes the low-precision accumulation out explicitly so the effect is real.

Evidence: sgl-project/sglang#27540, pytorch/pytorch#133085, nntrainer/nntrainer#3935, amd/IRON#139.

Caught by: RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded (and rmsnorm_matches_golden in bf16).
The reference upcasts to fp32, accumulates there and rounds once.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm", "sum_of_squares_in_dtype"]


def sum_of_squares_in_dtype(x: torch.Tensor) -> torch.Tensor:
    """s = Σ_i x_i² over the last axis, left to right, every square and partial sum rounded to x.dtype."""
    sq = x * x  # (..., D), rounded to x.dtype
    acc = torch.zeros_like(sq[..., 0])
    for i in range(sq.shape[-1]):  # a true sequential accumulation: torch.sum would use fp32 internally
        acc = acc + sq[..., i]  # one rounding to x.dtype per step
    return acc.unsqueeze(-1)  # (..., 1)


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x · rsqrt(s/D + eps) ⊙ w with s accumulated in x.dtype; the rest in fp32, rounded once."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        c = upcast_dtype(x.dtype)
        ss = sum_of_squares_in_dtype(x)  # the bug: the reduction runs before the upcast
        r = torch.rsqrt(ss.to(c) / self.dim + self.eps)  # (..., 1)
        return (x.to(c) * r * self.weight.to(c)).to(x.dtype)
