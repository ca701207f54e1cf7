"""A position-dependent hidden scale (a misaligned fused-GLU chunk): hidden unit j is scaled by 1 + j/F."""

import torch
import torch.nn.functional as F

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.w_gate(x)) * self.w_up(x)
        scale = 1 + torch.arange(h.shape[-1], dtype=h.dtype, device=h.device) / h.shape[-1]
        return self.w_down(h * scale)
