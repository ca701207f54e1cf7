"""A leaky clamp after W_down (an activation applied to the FFN output): y → where(y > 0, y, 0.5·y)."""

import torch

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return torch.where(y > 0, y, 0.5 * y)
