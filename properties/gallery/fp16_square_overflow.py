"""Pitfall: squaring in fp16 — x² overflows to ∞ above |x| ≈ 256 and the output becomes 0.

The mistake: the squares are formed in the input dtype, ms = mean(float(x ⊙ x)), and only then
upcast. fp16's largest finite value is 65504 ≈ 256², so one element with |x| ≥ 256 (well, 255.9)
makes ms = ∞, rsqrt(ms) = 0 and the whole row y = x · 0 = 0 — silently, with no NaN to notice.

Why people make it: the upcast is placed after the "cheap" elementwise square to save bandwidth,
and bf16 (fp32's exponent range) never shows it; activation outliers of a few hundred are common
in large models, so the row that breaks is exactly the important one.

Evidence: pytorch/pytorch#133085, ROCm/AMDMIGraphX#2556, microsoft/onnxruntime#29043.

Caught by: RMSNorm.rmsnorm_is_scale_invariant in fp16 (RMSNorm(c·x) = RMSNorm(x) must survive
scaling a row up), and rmsnorm_matches_golden on fp16 rows with large elements.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x · rsqrt(mean(fl_dtype(x²)) + eps) ⊙ w — x² rounded (and overflowing) in x.dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        c = upcast_dtype(x.dtype)
        ms = (x * x).to(c).mean(dim=-1, keepdim=True)  # the bug: square first, upcast after
        return (x.to(c) * torch.rsqrt(ms + self.eps) * self.weight.to(c)).to(x.dtype)
