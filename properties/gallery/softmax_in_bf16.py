"""Pitfall: a precision downgrade in attention — the softmax computed in bf16 inside an fp32 block.

The mistake: scores, max subtraction, exp, the row sum and the division run in bf16 (the scores are cast down
first); q, k, v, p·v and everything else stay fp32. Each probability then errs by ~2⁻⁸ relatively, the row sum
over T keys by more, and the attention output by ~2⁻⁹ of its scale: thousands of fp32 ULPs.

Why people make it: a fused "softmax in the activation dtype" kernel reused in a higher-precision model, or the
upcast removed to save memory (the softmax of a long sequence is the largest activation of a block).

Evidence: apple/axlearn#18 (torch attention softmax moved to fp32 for bf16 inputs),
PaddlePaddle/PaddleCustomDevice#2019 (a bf16 softmax kernel's precision fixed).

Caught by: Block.block_matches_stored_golden in fp32 (T = 1024, judged at a sample of positions by the
probabilistic tier: far outside it); invisible to the deterministic tier alone at T = 1024.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Attention", "Block"]


class Attention(nanolm_core.Attention):
    """WRONG: softmax(scores) evaluated in bf16, probabilities converted back for p·v."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = self.expand_kv(k), self.expand_kv(v)
        scores = self.mask(self.scores(q, k))
        probs = torch.softmax(scores.to(torch.bfloat16), dim=-1).to(scores.dtype)  # the bug: softmax in bf16
        return probs @ v.to(probs.dtype)


class Block(nanolm_core.Block):
    """The reference pre-norm block with the bf16 softmax."""

    attn_cls = Attention
