"""SiLU written as z·(1 − σ(−z)) in the storage dtype: 1 − σ(−z) cancels for negative z (skyzh/tiny-llm#164)."""

import torch

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = self.w_gate(x)
        return self.w_down(g * (1 - torch.sigmoid(-g)) * self.w_up(x))
