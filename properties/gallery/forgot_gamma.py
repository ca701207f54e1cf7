"""Pitfall: forgetting γ — the learnable gain is created but never multiplied in.

The mistake: y = x / sqrt(mean(x²) + eps), with the parameter ``weight`` left unused.

Why people make it: ``weight`` is initialised to ones, so at initialisation the output is exactly
right; a test that builds a fresh module and compares with a reference passes. The model trains,
just without per-dimension scale (and the optimiser's gradient for ``weight`` is silently zero).

Evidence: the course's common mistakes ("forgetting γ: test_rmsnorm_scales_with_gamma").

Caught by: RMSNorm.rmsnorm_scales_with_gamma — with random γ the output must be γ ⊙ RMSNorm₁(x).
Lesson: always randomise the weights in a test.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x / sqrt(mean(x²) + eps) — ``weight`` (γ) is ignored."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        return (xc * torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)).to(x.dtype)  # the bug: no "* w"
