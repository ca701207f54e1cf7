"""A hand-written SiLU backward that uses σ(z) as the derivative (it is σ(z)·(1 + z·(1 − σ(z))))."""

import torch

import nanolm_core


class _Silu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.nn.functional.silu(z)

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * torch.sigmoid(z)


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(_Silu.apply(self.w_gate(x)) * self.w_up(x))
