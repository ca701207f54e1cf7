"""A stray constant in the hidden activation (a bias folded in by a converter): silu(g)·u + 1e-3."""

import torch
import torch.nn.functional as F

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x) + 1e-3)
