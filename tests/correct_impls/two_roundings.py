"""Correct, HF-Llama's conventions: RMSNorm rounds x·r to the input dtype before ·w (two roundings); SwiGLU rounds
silu(W_g x) and the product to the storage dtype (as torch does in bf16); the Block composes them."""

import torch
import torch.nn.functional as F

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        xc = x.to(c)
        n = (xc * torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)  # first rounding
        return self.weight.to(x.dtype) * n  # second rounding


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.silu(self.w_gate(x)).to(x.dtype)
        return self.w_down((s * self.w_up(x)).to(x.dtype))


class Block(nanolm_core.Block):
    norm_cls, ffn_cls = RMSNorm, SwiGLU
