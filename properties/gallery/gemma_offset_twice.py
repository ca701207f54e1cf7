"""Pitfall: Gemma's (1 + w) weight applied on top of a plain gain — every output doubled.

The mistake: y = x / sqrt(mean(x²) + eps) ⊙ (1 + w) in a module whose ``weight`` already *is*
the gain (initialised to ones, as the contract says). Gemma stores w − 1 (initialised to zeros)
and multiplies by (1 + w); mixing the two conventions applies the offset twice (here) or not
at all (loading Gemma weights into a plain RMSNorm), and a third variant adds 1 + w in bf16, where
1 + 0.0039 rounds to 1.

Why people make it: the checkpoint converter and the module are written by different people;
both conventions are "RMSNorm", and the difference is one character.

Evidence: linkedin/Liger-Kernel#74, linkedin/Liger-Kernel#1462, utensils/mold#1078.

Caught by: RMSNorm.rmsnorm_scales_with_gamma (and rmsnorm_matches_golden): with γ random the
output must be γ ⊙ x/rms, not (1 + γ) ⊙ x/rms.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x / sqrt(mean(x²) + eps) ⊙ (1 + w) with w the contract's plain gain (init 1)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xc * r * (1.0 + self.weight.to(xc.dtype))).to(x.dtype)  # the bug: Gemma's offset
