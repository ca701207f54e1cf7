"""Divides by the Euclidean norm ‖x‖ instead of the RMS (forgets 1/D): outputs on the unit sphere, not √D."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.double()
        return (xc * torch.rsqrt(xc.pow(2).sum(-1, keepdim=True) + self.eps) * self.weight.double()).to(x.dtype)
