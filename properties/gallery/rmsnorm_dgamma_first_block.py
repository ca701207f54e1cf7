"""Pitfall: the backward kernel reduces dγ over its first block of 64 rows only.

The mistake: dγ = Σ_rows g ⊙ x·r is split into partial sums, one per block of 64 rows, written to a
(blocks, D) buffer and summed afterwards — but the buffer is sized, or the launch grid computed, for one
block, so only rows 0 … 63 contribute. dx is per row and exact; dγ is exact for every batch of ≤ 64 tokens
and wrong beyond — and a training step has thousands.

Why people make it: the partial-sum scheme of a parallel weight-gradient reduction is where row counts enter
a norm kernel at all, and unit tests use a handful of rows.

Evidence: linkedin/Liger-Kernel#182 (partial aggregation of the RMSNorm weight gradient across programs gave
wrong dW elements), BobMcDear/attorch#17 (an RMSNorm backward wrong only when the kernel blocks several rows
together: batch ≥ 1024 rows with narrow features).

Caught by: RMSNorm.rmsnorm_gradients_match_golden — its pinned case has 160 rows (2½ blocks of 64); the drawn
cases have ≤ 4 rows.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]

BLOCK = 64


class _RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps)
        ctx.save_for_backward(xc, r, w)
        return (xc * r * w.to(c)).to(x.dtype)

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        xc, r, w = ctx.saved_tensors
        gc, wc, D = g.to(xc.dtype), w.to(xc.dtype), xc.shape[-1]
        gw = gc * wc
        dx = r * gw - xc * r.pow(3) * (gw * xc).sum(dim=-1, keepdim=True) / D
        rows = (gc * xc * r).reshape(-1, D)
        dw = rows[:BLOCK].sum(dim=0)  # the bug: the partial sums of the row blocks after the first are lost
        return dx.to(g.dtype), dw.to(w.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Forward exact; backward: dγ summed over the first 64 rows only."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return _RMSNormFunction.apply(x, self.weight, self.eps)
