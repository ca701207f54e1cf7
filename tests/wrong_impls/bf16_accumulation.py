"""The sum of squares accumulated in bf16 (a true low-precision accumulation: every partial sum rounded)."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.bfloat16:
            return super().forward(x)
        s = torch.zeros((*x.shape[:-1], 1), dtype=torch.bfloat16, device=x.device)
        for i in range(x.shape[-1]):  # sequential, rounded to bf16 after every addition
            s = s + (x[..., i : i + 1].float() ** 2).to(torch.bfloat16)
        r = torch.rsqrt(s.float() / x.shape[-1] + self.eps)
        return (x.float() * r * self.weight.float()).to(x.dtype)
