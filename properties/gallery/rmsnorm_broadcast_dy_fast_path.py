"""Pitfall: RMSNorm's backward treats a broadcast incoming gradient as "one row" and broadcasts dx back.

The mistake: a backward that notices dy is broadcast over the rows (stride 0 on the leading dims: one row of
storage) takes a shortcut — it computes the input gradient of the first row and broadcasts it, as if the input
rows were broadcast too. dx depends on each row of x, not only on dy; every row but the first gets the first
one's gradient. Contiguous gradients are exact.

Why people make it: stride 0 looks like an invitation to do the work once.

Evidence: none known in a public project; a test-only mutation that proves the protocol has power.

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "cotangent: row" (one row of cotangent
broadcast over the rows; the stride-0 cotangent of a sum takes the same shortcut).
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class _Function(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps)
        ctx.save_for_backward(xc, r, w)
        return (xc * r * w.to(c)).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        xc, r, w = ctx.saved_tensors
        gc, wc = g.to(xc.dtype), w.to(xc.dtype)
        gw = gc * wc
        dx = r * gw - xc * r.pow(3) * (gw * xc).sum(dim=-1, keepdim=True) / xc.shape[-1]
        if g.dim() > 1 and all(s == 0 for s in g.stride()[:-1]):  # the bug: x is not broadcast, only dy
            dx = dx.reshape(-1, xc.shape[-1])[:1].expand(dx.numel() // xc.shape[-1], xc.shape[-1]).reshape(dx.shape)
        dw = (gc * xc * r).reshape(-1, xc.shape[-1]).sum(dim=0)
        return dx.to(g.dtype), dw.to(w.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Forward exact; backward WRONG for a cotangent broadcast over the rows."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return _Function.apply(x, self.weight, self.eps)
