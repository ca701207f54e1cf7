"""In bf16 the hidden activation is stored with 4 mantissa bits (an fp8-like buffer); fp32 is untouched."""

import torch
import torch.nn.functional as F

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.w_gate(x)) * self.w_up(x)
        if x.dtype == torch.bfloat16:
            h = (h.view(torch.int16) & ~0x7).view(torch.bfloat16)  # drop 3 of the 7 mantissa bits
        return self.w_down(h)
