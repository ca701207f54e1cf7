"""x² computed in the input dtype: in fp16 it overflows above |x| ≈ 256 and the output collapses to 0."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ms = (x * x).mean(-1, keepdim=True, dtype=torch.float32)  # x·x rounded (and overflowing) in x.dtype
        return (x.float() * torch.rsqrt(ms + self.eps) * self.weight.float()).to(x.dtype)
