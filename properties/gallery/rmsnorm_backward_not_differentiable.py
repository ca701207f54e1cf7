"""Pitfall: RMSNorm's hand-written backward runs under no_grad, so its gradient cannot be differentiated again.

The mistake: the autograd Function computes dx and dγ correctly, but inside ``torch.no_grad()`` (or from
``.detach()``-ed tensors) to save memory: the gradient it returns carries no graph. First-order training is exact;
a double backward — a gradient penalty (WGAN-GP, R1), a Hessian–vector product, MAML's meta-gradient — sees a
constant where ∂(dx)/∂x belongs and silently gets zero second derivatives.

Why people make it: the backward is tested against autograd's first derivatives only, and ``torch.no_grad()`` in a
backward looks like a free optimisation.

Evidence: test-only (a non-differentiable custom backward is the documented limit of ``once_differentiable``; this
silent form has no public report cited here).

Caught by: RMSNorm.rmsnorm_second_derivatives_pass_gradgradcheck — fp64 gradgradcheck.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import upcast_dtype

__all__ = ["RMSNorm", "RMSNormFunction"]


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        ctx.eps = eps
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        return (xc * torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + eps) * w.to(c)).to(x.dtype)

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        x, w = ctx.saved_tensors
        with torch.no_grad():  # the bug: the gradient carries no graph
            c = upcast_dtype(x.dtype)
            xc, gc, wc = x.to(c), g.to(c), w.to(c)
            r = torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + ctx.eps)
            n = xc * r
            gn = gc * wc
            dx = r * (gn - n * (gn * n).mean(-1, keepdim=True))
            dw = (gc * n).reshape(-1, x.shape[-1]).sum(0)
        return dx.to(x.dtype), dw.to(w.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Correct values and first derivatives; WRONG (zero) second derivatives."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return RMSNormFunction.apply(x, self.weight, self.eps)
