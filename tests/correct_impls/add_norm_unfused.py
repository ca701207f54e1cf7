"""Correct, the unfused order of vLLM's ``fused_add_rms_norm`` and Liger's "llama" mode: z = fl(x + r) in the input
dtype (stored as h and read by the norm), the variance of z in fp32, fl(z · rsqrt(var + eps)) rounded to the input
dtype and only then multiplied by w in that dtype (two roundings, as HF Llama). No declaration."""

import torch

import nanolm_core


def unfused(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float):
    z = x + residual  # rounded to the input dtype
    zc = z.to(torch.float64 if z.dtype == torch.float64 else torch.float32)
    normed = (zc * torch.rsqrt(zc.pow(2).mean(-1, keepdim=True) + eps)).to(z.dtype)  # first rounding
    return normed * weight.to(z.dtype), z  # second rounding


class AddRMSNorm(nanolm_core.AddRMSNorm):
    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return unfused(x, residual, self.weight, self.eps)
