"""Pitfall: a kernel whose block size is capped — columns past the block are left out of the reduction.

The mistake: the kernel loads one block of BLOCK columns per row (here 4096) and computes the mean of
squares from that block only, dividing by D; the columns past the block are scaled but never summed.
Every row up to D = 4096 is exact; wider rows get a wrong r.

Why people make it: a block size is picked as "next power of two of D, capped at the hardware maximum", and
the loop that should walk the remaining blocks is missing — the tests use D ≤ 4096.

Evidence: facebookresearch/xformers#785 (a Triton layer norm kernel that ignores the columns past
BLOCK_SIZE_N), vllm-project/vllm-ascend#5012 (a Triton RMSNorm launch grid capped so rows past it are
not processed).

Caught by: RMSNorm.rmsnorm_matches_stored_golden on the stored rows with D > 4096 (the drawn cases of the
ci profile stop at D = 769).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]

BLOCK = 4096


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG for D > 4096: ms = Σ_{j < 4096} x_j² / D."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        ms = xc[..., :BLOCK].pow(2).sum(dim=-1, keepdim=True) / self.dim  # the bug: one block only
        return (xc * torch.rsqrt(ms + self.eps) * self.weight.to(xc.dtype)).to(x.dtype)
