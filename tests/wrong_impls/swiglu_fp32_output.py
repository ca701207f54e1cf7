"""Returns the fp32 result for 16-bit input (an upcast that is never cast back)."""

import torch
import torch.nn.functional as F

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wg, wu, wd = (m.weight.float() for m in (self.w_gate, self.w_up, self.w_down))
        xf = x.float()
        y = F.linear(F.silu(F.linear(xf, wg)) * F.linear(xf, wu), wd)
        return y.double() if x.dtype == torch.float64 else y
