"""Output dtype drift: returns the fp32 compute result for 16-bit input (huggingface/transformers#30236)."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return y.float() if x.dtype in (torch.float16, torch.bfloat16) else y
