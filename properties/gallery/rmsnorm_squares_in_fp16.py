"""Pitfall: RMSNorm squares bf16 activations in fp16, which overflows past |x| = 256.

The mistake: to reuse an fp16 reduction kernel, the bf16 input is cast to fp16 and squared there before the fp32
mean. fp16's range ends at 65504, so any |x| above 256 squares to inf, the row's rsqrt is 0 and the whole row
comes out as zeros. Activations of order one never get near; the massive activations trained models carry in a
few channels (hundreds to thousands, in every token) zero every row.

Why people make it: fp16 and bf16 are both "half precision"; the cast looks like a free reuse and is lossless for
the values tests draw.

Evidence: test-only (the fp16 overflow of x² is the known fp16 pitfall, here reached from bf16; no public report of
this kernel is cited here).

Caught by: RMSNorm.rmsnorm_matches_golden_at_real_magnitudes — bf16 inputs with massive channels.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm", "squares_in_fp16"]


def squares_in_fp16(x: torch.Tensor) -> torch.Tensor:
    """mean(x², −1) with x² computed in fp16 (inf past |x| = 256), the mean in fp32, (..., 1)."""
    return (x.to(torch.float16) ** 2).float().mean(dim=-1, keepdim=True)


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG for |x| > 256: x² overflows fp16 and the row becomes zeros."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.bfloat16:
            return super().forward(x)
        xc = x.float()
        return (xc * torch.rsqrt(squares_in_fp16(x) + self.eps) * self.weight.float()).to(x.dtype)  # the bug
