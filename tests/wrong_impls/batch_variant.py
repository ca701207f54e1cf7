"""Batch variance: the kernel's operation order depends on the row count (vllm-project/vllm#48391).

Accurate either way — for more than 2 rows it computes (x·w)·(1/√(ms+eps)) instead of (x·rsqrt(ms+eps))·w —
but the bits of a row depend on how many rows share the call.
"""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 2 or x.reshape(-1, x.shape[-1]).shape[0] <= 2:
            return super().forward(x)
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        xc = x.to(c)
        return ((xc * self.weight.to(c)) * (1 / torch.sqrt(xc.pow(2).mean(-1, keepdim=True) + self.eps))).to(x.dtype)
