"""Attention scores without the 1/√K scale (softmax(q·kᵀ) instead of softmax(q·kᵀ/√K))."""

import torch

import nanolm_core
from nanolm_core import attention


class _Attention(attention.Attention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        K = self.config.head_dim
        with torch.no_grad():
            saved = self.wq.weight.clone()
            self.wq.weight.mul_(K**0.5)  # scores·√K / √K = unscaled scores
        try:
            return super().forward(x)
        finally:
            with torch.no_grad():
                self.wq.weight.copy_(saved)


class Block(nanolm_core.Block):
    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__(config)
        self.attn = _Attention(config)
