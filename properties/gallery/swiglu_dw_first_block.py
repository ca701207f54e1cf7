"""Pitfall: a fused SwiGLU backward accumulates dW_down over the first block of 64 tokens only.

The mistake: dW_down = Σ_tokens g ⊗ h is computed as a split-K GEMM over the token dimension — one partial
product per block of 64 tokens — and only the first partial product is written. dx, dW_gate and dW_up are
right; dW_down is exact for ≤ 64 tokens and misses every later block.

Why people make it: a weight gradient is the one GEMM of the backward pass whose reduction runs over tokens,
so it is where a token-blocked (split-K) kernel's bookkeeping lives; tests use a few tokens.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: SwiGLU.swiglu_gradients_match_golden — its pinned case has 160 tokens (2½ blocks of 64); the drawn
cases have ≤ 3 tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU", "first_block_linear"]

BLOCK = 64


class _FirstBlockLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(h, w)
        return F.linear(h, w)

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, w = ctx.saved_tensors
        g2, h2 = g.reshape(-1, g.shape[-1]), h.reshape(-1, h.shape[-1])
        dw = g2[:BLOCK].T @ h2[:BLOCK]  # the bug: the split-K partial products after the first block are lost
        return g @ w, dw


def first_block_linear(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """F.linear(h, w) whose weight gradient sums over the first 64 rows only."""
    return _FirstBlockLinear.apply(h, w)


class SwiGLU(nanolm_core.SwiGLU):
    """Forward exact; backward: dW_down summed over the first 64 tokens only."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return first_block_linear(F.silu(self.w_gate(x)) * self.w_up(x), self.w_down.weight)
