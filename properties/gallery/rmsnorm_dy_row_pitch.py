"""Pitfall: RMSNorm's backward checks only that dy's last stride is 1, then walks its rows at pitch D.

The mistake: before launching, the backward makes dy contiguous unless ``dy.stride(-1) == 1`` — the check most
kernels do — and then addresses row r at ``dy_ptr + r·D``. A gradient with a larger row pitch (a slice of a
wider buffer, every other row, the rows of a fused output) passes the check and is read at the wrong rows.
Contiguous and transposed gradients are exact (the latter is copied).

Why people make it: "contiguous in the last dim" is mistaken for "contiguous".

Evidence: unslothai/unsloth#10617 (the RMSNorm backward's Triton kernel assumed contiguous columns and
non-overlapping rows: row-strided incoming gradients gave wrong input gradients).

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "cotangent: strided" (every other row of a
buffer of NaN; the broadcast cotangents expose it too).
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


def _rows(g: torch.Tensor) -> torch.Tensor:
    """The bug: after checking stride(-1) == 1 only, rows read at pitch D."""
    if g.stride(-1) != 1:
        g = g.contiguous()
    D = g.shape[-1]
    return torch.as_strided(g, (g.numel() // D, D), (D, 1), g.storage_offset()).reshape(g.shape)


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
