"""Pitfall: the attention softmax is computed as exp(s) / Σ exp(s), without subtracting the row's maximum.

The mistake: mathematically softmax(s) = softmax(s − max s); numerically exp(s) overflows fp32 once s > 88.7
(inf/inf = NaN) and underflows to 0 for s < −103 (0/0 = NaN). Logits of a few units — the ones tests draw — are
exact; a model whose attention logits reach the hundreds (long contexts, large head dims, ALiBi biases) or a
fully masked row produces NaN that propagates through every later layer.

Why people make it: the max pass costs a third reduction; "our logits are small".

Evidence: ggml-org/llama.cpp#2665 (the CUDA softmax did not subtract the max: NaN for large attention scores),
NVIDIA/FasterTransformer#43 (NaN from an unprotected softmax input), pytorch/executorch#18407 (a naive softmax
overflowed fp32 at a logit of 151: Phi-4-mini produced garbage).

Caught by: Block.block_matches_golden — its pinned cases with every logit ≈ −4096 and ≈ +4096.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "NaiveSoftmaxAttention"]


class NaiveSoftmaxAttention(nanolm_core.Attention):
    """softmax without max subtraction — WRONG (NaN) once exp overflows or every term underflows."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = self.expand_kv(k), self.expand_kv(v)
        e = torch.exp(self.mask(self.scores(q, k)))  # the bug: exp(s), not exp(s − max s)
        probs = e / e.sum(dim=-1, keepdim=True)
        return probs @ v.to(probs.dtype)


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = NaiveSoftmaxAttention
