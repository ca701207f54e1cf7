"""Pitfall: RMSNorm's backward reads the incoming gradient as if it were contiguous.

The mistake: the backward kernel takes dy's data pointer and walks it as a dense (rows, D) array. The gradient
autograd hands a backward is whatever the next op produced: ``y.sum().backward()`` gives ones broadcast with
stride 0 (one element of storage), a transpose gives permuted strides, a slice gives a row pitch. The kernel
reads past the broadcast element, or the wrong elements, and dx and dγ are garbage. A contiguous dy — the one
unit tests build with ``torch.randn_like(y)`` — is exact.

Why people make it: the forward's input is made contiguous and the backward's gradient is assumed to be so too.

Evidence: Dao-AILab/quack#88 (the RMSNorm backward broke on ``rmsnorm(x, w).sum().backward()``: a gradient that
is not contiguous), flagos-ai/FlagGems#1082 (a non-contiguous dy read at wrong locations: NaN/Inf in x.grad).

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "cotangent: sum" (ones with stride 0 over a
buffer of NaN; the other cotangent layouts catch it too).
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


def _dense(g: torch.Tensor) -> torch.Tensor:
    """The bug: dy's storage walked as a dense array of dy's shape, whatever its strides."""
    strides, step = [], 1
    for n in reversed(g.shape):
        strides.insert(0, step)
        step *= n
    return torch.as_strided(g, g.shape, strides, g.storage_offset())


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
        gc, wc = _dense(g).to(xc.dtype), w.to(xc.dtype)
        gw = gc * wc
        dx = r * gw - xc * r.pow(3) * (gw * xc).sum(dim=-1, keepdim=True) / xc.shape[-1]
        dw = (gc * xc * r).reshape(-1, xc.shape[-1]).sum(dim=0)
        return dx.to(g.dtype), dw.to(w.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Forward exact; backward WRONG for any dy that is not contiguous."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return _Function.apply(x, self.weight, self.eps)
