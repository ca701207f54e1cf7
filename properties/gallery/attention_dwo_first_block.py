"""Pitfall: the attention output projection's weight gradient sums over the first 64 tokens only.

The mistake: dW_o = Σ_tokens g ⊗ heads is computed by a token-blocked (split-K) GEMM whose partial products
after the first block of 64 tokens are lost. The forward pass and dx are exact; dW_o is exact for ≤ 64 tokens
(B·T) — every unit test — and wrong for a real batch.

Why people make it: the weight gradients are the backward GEMMs that reduce over tokens; a fused attention
backward that owns dW_o carries its own blocking over tokens.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: Block.block_parameter_gradients_match_fp64 — 80 rows (B = 2, T = 40); the other Block derivative
laws see vᵀ∂out/∂x only, and gradcheck runs on 3 tokens.
"""

from __future__ import annotations

import torch
from torch import nn

import nanolm_core
from nanolm_core.config import ModelConfig
from properties.gallery.swiglu_dw_first_block import first_block_linear

__all__ = ["Block"]


class _FirstBlockLinear(nn.Linear):
    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return first_block_linear(h, self.weight)


class Block(nanolm_core.Block):
    """The reference pre-norm block; backward: dW_o summed over the first 64 tokens only."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        # the attention's output projection as a linear whose weight gradient is token-blocked (same parameter name)
        self.attn.wo = _FirstBlockLinear(config.n_heads * config.head_dim, config.dim, bias=False)
