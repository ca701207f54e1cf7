"""Pitfall: subtracting the mean "out of habit" — RMSNorm silently becomes LayerNorm without a bias.

The mistake: y = (x − mean(x)) / sqrt(mean((x − mean(x))²) + eps) ⊙ w instead of
y = x / sqrt(mean(x²) + eps) ⊙ w.

Why people make it: LayerNorm came first and every tutorial centres before it scales; the two
formulas look alike, and with zero-mean test inputs (randn) they agree to a few percent
(max difference 0.05), so a test on randn passes. With mean 3 the difference is 4.0.

Evidence: ggml-org/llama.cpp#173 (the course's first common mistake).

Caught by: RMSNorm.rmsnorm_does_not_center — a row with a non-zero mean keeps its mean direction
(RMSNorm([3, 4]) = [0.85, 1.13]; this returns [−1, 1]).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = (x − x̄) / sqrt(mean((x − x̄)²) + eps) ⊙ w, computed in fp32, rounded once."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        xc = xc - xc.mean(dim=-1, keepdim=True)  # the bug: centring, as LayerNorm does
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xc * r * self.weight.to(xc.dtype)).to(x.dtype)
