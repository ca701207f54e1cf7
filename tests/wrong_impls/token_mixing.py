"""Tokens leak into each other: x is smoothed with its neighbour token before the FFN (a wrong roll/axis)."""

import torch

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() >= 2 and x.shape[-2] > 1:
            x = x + 0.25 * x.roll(1, dims=-2)
        return super().forward(x)
