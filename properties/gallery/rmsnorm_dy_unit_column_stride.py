"""Pitfall: RMSNorm's backward honours dy's row pitch but assumes its columns are adjacent.

The mistake: the backward kernel gets dy's row stride as an argument (``dy.stride(-2)``) and computes column
addresses as ``dy_ptr + row·stride + col`` — unit column stride assumed. A gradient that arrives transposed
(feature-major, as after a ``.transpose`` or a permuted layout in the next op) is read along the wrong axis.
Contiguous gradients, and row-strided ones, are exact.

Why people make it: the row stride is the one stride that obviously varies (padding, slices); the column stride
of an activation is 1 "always".

Evidence: Dao-AILab/flash-attention#355 (the backward was wrong for a gradient that was not contiguous until
``dout.contiguous()`` was added), ByteDance-Seed/VeOmni#958 (review: an RMSNorm Triton backward passed only the
row stride and computed column addresses as ``x_ptr + col``, wrong for a column-strided input).

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "cotangent: transposed" (the stride-0
cotangent of a sum exposes it too).
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


def _rows(g: torch.Tensor) -> torch.Tensor:
    """The bug: dy read as rows at dy.stride(-2) apart, columns assumed adjacent."""
    pitch = g.stride(-2) if g.dim() > 1 else g.shape[-1]
    return torch.as_strided(g, (g.numel() // g.shape[-1], g.shape[-1]), (pitch, 1), g.storage_offset()).reshape(g.shape)


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
        gc, wc = _rows(g).to(xc.dtype), w.to(xc.dtype)
        gw = gc * wc
        dx = r * gw - xc * r.pow(3) * (gw * xc).sum(dim=-1, keepdim=True) / xc.shape[-1]
        dw = (gc * xc * r).reshape(-1, xc.shape[-1]).sum(dim=0)
        return dx.to(g.dtype), dw.to(w.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Forward exact; backward WRONG for some layouts of dy (see the module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return _Function.apply(x, self.weight, self.eps)
