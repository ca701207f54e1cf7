"""Forgets γ: y = x / rms(x). Invisible while γ = 1 (the default init)."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.float() if x.dtype != torch.float64 else x
        return (xc * torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)
