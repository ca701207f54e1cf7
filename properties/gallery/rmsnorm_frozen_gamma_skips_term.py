"""Pitfall: RMSNorm's backward skips the dγ work when γ is frozen — and with it a term dx needs.

The mistake: to save time in parameter-efficient fine-tuning (γ frozen), the backward checks
``ctx.needs_input_grad`` and skips the block that computes dγ. That block also computed m = mean(g·γ·x̂), the
projection term of dx = r·(g·γ − x̂·m); with γ frozen, dx loses it. With γ trainable — every full fine-tuning
test — dx is exact, and so is dγ.

Why people make it: the optimisation is real (linkedin/Liger-Kernel#1067 measured it); the shared intermediate
sits in the branch being removed.

Evidence: none known for this exact slip; linkedin/Liger-Kernel#1068 added the frozen-weight branches to the norm
backwards (and fixed a None check in the fused add-norm's on the way). Kept as a test-only mutation.

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "partial" (the input's gradient with every
parameter frozen, the parameters' with the input detached).
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
        gw, dw, m = gc * wc, None, torch.zeros_like(r)
        if ctx.needs_input_grad[1]:  # the bug: m is computed only on the dγ path
            m = (gw * xc).sum(dim=-1, keepdim=True) / xc.shape[-1]
            dw = (gc * xc * r).reshape(-1, xc.shape[-1]).sum(dim=0).to(w.dtype)
        dx = r * gw - xc * r.pow(3) * m
        return dx.to(g.dtype), dw, None


class RMSNorm(nanolm_core.RMSNorm):
    """Forward exact; dx WRONG when γ is frozen."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return _Function.apply(x, self.weight, self.eps)
