"""Pitfall: the attention backward recomputes the probabilities in the input dtype, without the row max.

The mistake: the forward computes the softmax in fp32 with the max subtracted; to save memory the backward does
not keep the probabilities but recomputes them from the scores — as exp(s) / Σ exp(s) in the activations' dtype.
In fp16, exp(s) overflows past s = 11.09: at the logits of a trained model (10–30, the largest in almost every
row) the recomputed probabilities are inf/inf = NaN and so is every gradient. The forward is exact; bf16 (range
of fp32) and fp32 stay finite; tests with logits of a few units pass.

Why people make it: recomputation in the backward is the memory-saving half of fused attention, and the forward's
care (fp32, max subtracted) is not repeated there.

Evidence: tinygrad/tinygrad#9213 (attention's exp, kept for the backward, computed in half precision),
huggingface/transformers#17437 (softmax NaN in half precision for large models, fixed by computing it in fp32).

Caught by: Block.block_jacobian_is_identity_plus_branch in fp16 — its pinned case at T = 513 with logits up to ≈ 20.
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core

__all__ = ["Block", "RecomputingAttention"]


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, scores: torch.Tensor, storage: torch.dtype) -> torch.Tensor:
        ctx.save_for_backward(scores)
        ctx.storage = storage
        return torch.softmax(scores, dim=-1)

    @staticmethod
    def backward(ctx: Any, dp: torch.Tensor) -> tuple[Any, None]:
        (scores,) = ctx.saved_tensors
        e = torch.exp(scores.to(ctx.storage))  # the bug: no max subtracted, in the activations' dtype
        p = (e / e.sum(dim=-1, keepdim=True)).to(scores.dtype)
        return p * (dp - (dp * p).sum(dim=-1, keepdim=True)), None


class RecomputingAttention(nanolm_core.Attention):
    """Forward exact; the softmax's backward recomputes p = exp(s)/Σexp(s) in v's dtype — WRONG (NaN) in fp16."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, ve = self.expand_kv(k), self.expand_kv(v)
        probs = _Softmax.apply(self.mask(self.scores(q, k)), v.dtype)
        return probs @ ve.to(probs.dtype)


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = RecomputingAttention
