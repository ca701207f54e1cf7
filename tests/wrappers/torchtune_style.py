"""torchtune's ``RMSNorm`` and a decoder layer built the torchtune way, as a user maps them onto the contract: the
norm computes in fp32 (``x.float()``) and rounds to the input dtype before the scale; ``RotaryPositionalEmbeddings``
builds its cache in fp32 and rotates ``x.float()`` before ``type_as(x)``. In fp64 layers both run in fp32."""

import torch
from torch import nn

import nanolm_core
from nanolm_core.attention import apply_rope, rope_cos_sin


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x_fp32 = x.float()
        normed = (x_fp32 * torch.rsqrt(x_fp32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
        return normed * self.weight


class _Attention(nanolm_core.Attention):
    def rope_tables(self, T, dtype, device):  # the cache in fp32, whatever the layer's dtype
        return rope_cos_sin(T, self.config.head_dim, self.config.rope_theta, torch.float32, device)

    def rope(self, x, cos, sin):  # x.float() rotated, then type_as(x); attention continues in the layer's c
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        return apply_rope(x.float(), cos, sin).type_as(x).to(c)


class Block(nanolm_core.Block):
    norm_cls = RMSNorm
    attn_cls = _Attention
