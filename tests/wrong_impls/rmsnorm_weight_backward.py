"""A hand-written backward whose weight gradient forgets the normaliser: dw = Σ g·x (no r)."""

import torch

import nanolm_core


class _F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, eps):
        with torch.enable_grad():
            xd = x.detach().requires_grad_(True)
            y = nanolm_core.RMSNorm.forward(_Plain(w.detach(), eps), xd)
        ctx.save_for_backward(x, w)
        ctx.eps = eps
        return y.detach()

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        with torch.enable_grad():
            xd = x.detach().requires_grad_(True)
            y = nanolm_core.RMSNorm.forward(_Plain(w.detach(), ctx.eps), xd)
            (dx,) = torch.autograd.grad(y, xd, g)
        dw = (g * x).reshape(-1, x.shape[-1]).sum(0)  # the bug: missing r
        return dx, dw, None


class _Plain(torch.nn.Module):
    def __init__(self, w, eps):
        super().__init__()
        self.weight, self.eps, self.dim = w, eps, w.shape[-1]


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _F.apply(x, self.weight, self.eps)
