"""Returns fp32 for 16-bit input (a residual stream kept in fp32 and never cast back)."""

import torch

import nanolm_core


class Block(nanolm_core.Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float() + self.attn(self.attn_norm(x)).float()
        out = h + self.ffn(self.ffn_norm(h.to(x.dtype))).float()
        return out.double() if x.dtype == torch.float64 else out
