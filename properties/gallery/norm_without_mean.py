"""Pitfall: the sum of squares where the mean belongs — every row lands on the unit sphere, not √D's.

The mistake: y = x · rsqrt(sum(x²) + eps) ⊙ w — ``.sum(-1)`` typed for ``.mean(-1)``, which makes the norm an
L2 normalisation x/‖x‖₂. The output is √D times too small (64× at D = 4096), and eps now competes with
D·mean(x²) instead of mean(x²).

Why people make it: "normalise" reads as "divide by the norm", ``F.normalize`` does exactly this, and the
direction of every row is right: a test of cosine similarity, argmax or sign passes.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: RMSNorm.rmsnorm_output_has_norm_sqrt_d — with γ = 1 every row has ‖y‖₂ = √(D·ms/(ms+eps)).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x / sqrt(sum(x²) + eps) ⊙ w (x/‖x‖₂ up to eps), computed in fp32, rounded once."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        r = torch.rsqrt(xc.pow(2).sum(dim=-1, keepdim=True) + self.eps)  # the bug: sum, not mean
        return (xc * r * self.weight.to(xc.dtype)).to(x.dtype)
