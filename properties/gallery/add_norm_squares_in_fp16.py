"""Pitfall: AddRMSNorm squares the bf16 stream in fp16, which overflows past |h| = 256.

The mistake: the fused add-norm reuses an fp16 reduction: h = x + r (correct, bf16) is cast to fp16 and squared
there. Any |h| above 256 squares to inf and the normalised row is zeros. The residual stream is exactly where
massive activations live (hundreds to thousands in a few fixed channels of every token).

Why people make it: as for RMSNorm: a half-precision kernel reused across the two 16-bit types.

Evidence: test-only (no public report of this kernel is cited here).

Caught by: AddRMSNorm.add_rmsnorm_matches_golden_at_real_magnitudes — bf16 inputs with massive channels.
"""

from __future__ import annotations

import torch

import nanolm_core
from properties.gallery.rmsnorm_squares_in_fp16 import squares_in_fp16

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG for |h| > 256: h² overflows fp16 and y's row becomes zeros."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dtype != torch.bfloat16:
            return super().forward(x, residual)
        h = x + residual
        hc = h.float()
        return (hc * torch.rsqrt(squares_in_fp16(h) + self.eps) * self.weight.float()).to(h.dtype), h  # the bug
