"""Solution: the pre-norm Block (week 6)."""

from __future__ import annotations

import torch
from torch import nn

from nanolm_core import Attention, ModelConfig

from .modules import RMSNorm, SwiGLU

__all__ = ["Block"]


class Block(nn.Module):
    """Pre-norm residual block:  h = x + attn(attn_norm(x)),  out = h + ffn(ffn_norm(h))."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.attn = Attention(config)
        self.attn_norm = RMSNorm(config.dim, config.norm_eps)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)
        self.ffn = SwiGLU(config.dim, config.ffn_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.attn_norm(x))  # (B, T, D)
        return h + self.ffn(self.ffn_norm(h))
