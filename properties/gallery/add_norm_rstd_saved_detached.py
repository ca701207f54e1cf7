"""Pitfall: AddRMSNorm's hand-written backward keeps 1/rms detached, so second derivatives miss its dependence on h.

The mistake: the fused add-norm's autograd Function stores rstd = 1/√(mean(h²)+eps) on ``ctx`` as a detached
tensor (the kernel's saved statistic) and differentiates through everything else. First derivatives are exact;
the second derivative lacks every term through rstd — a gradient penalty or a Hessian–vector product through the
norm is silently wrong.

Why people make it: fused norms save rstd for the backward (it is what makes them fast); keeping it out of the
graph looks like the same optimisation.

Evidence: test-only (no public report of this kernel is cited here).

Caught by: AddRMSNorm.add_rmsnorm_second_derivatives_pass_gradgradcheck — fp64 gradgradcheck.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import upcast_dtype

__all__ = ["AddRMSNorm", "AddRMSNormFunction"]


class AddRMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, eps: float):
        h = x + r
        c = upcast_dtype(h.dtype)
        hc = h.to(c)
        rstd = torch.rsqrt(hc.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(h, w)
        ctx.rstd = rstd.detach()  # the bug: the statistic leaves the graph
        return (hc * rstd * w.to(c)).to(h.dtype), h

    @staticmethod
    def backward(ctx, dy: torch.Tensor, dh: torch.Tensor):
        h, w = ctx.saved_tensors
        c = upcast_dtype(h.dtype)
        hc, rstd = h.to(c), ctx.rstd
        n = hc * rstd
        gn = dy.to(c) * w.to(c)
        d = rstd * (gn - n * (gn * n).mean(-1, keepdim=True)) + dh.to(c)
        dw = (dy.to(c) * n).reshape(-1, h.shape[-1]).sum(0)
        return d.to(h.dtype), d.to(h.dtype), dw.to(w.dtype), None


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """Correct values and first derivatives; WRONG second derivatives through 1/rms."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = AddRMSNormFunction.apply(x, residual, self.weight, self.eps)
        return y, h
