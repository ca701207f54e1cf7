"""Pitfall: RMSNorm sums x² in blocks of 512 columns and drops a tail block of a single element.

The mistake: a row wider than one block is reduced block by block; the tail block (D mod 512 columns) is handled
by a masked load whose bound is computed wrongly when one element is left: with D = 2^k + 1 (513, 1025, 4097)
the last element is missing from Σx², so every row is normalised by a slightly wrong RMS (the error is x_D²/D of
the mean square: large where the last element is large). Widths that are powers of two, and any tail of two
elements or more, are exact.

Why people make it: widths of real models are multiples of 64; a one-element tail is the edge case of a masked
load that only odd, off-by-one widths reach.

Evidence: tile-ai/tilelang-ascend#890 (RMSNorm wrong at N = 513: the automatic tail-block handling was defective),
ROCm/aiter#5044 (an RMSNorm fast path corrupted row-boundary elements for an odd hidden size, 769).

Caught by: RMSNorm.rmsnorm_matches_golden_at_code_path_sizes — rows of D = 513 and 4097.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]

BLOCK = 512


class RMSNorm(nanolm_core.RMSNorm):
    """y = x·rsqrt(Σ'x²/D + eps)·w with Σ' leaving out a one-element tail block — WRONG for D = 512k + 1."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        summed = self.dim - 1 if self.dim > BLOCK and self.dim % BLOCK == 1 else self.dim  # the bug
        r = torch.rsqrt(xc[..., :summed].pow(2).sum(dim=-1, keepdim=True) / self.dim + self.eps)
        return (xc * r * self.weight.to(c)).to(x.dtype)
