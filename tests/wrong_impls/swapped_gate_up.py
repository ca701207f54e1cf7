"""Gate and up swapped: silu(W_up x) ⊙ W_gate x (ml-explore/mlx-lm#767)."""

import torch
import torch.nn.functional as F

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_up(x)) * self.w_gate(x))
