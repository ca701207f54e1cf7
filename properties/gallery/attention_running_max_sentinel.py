"""Pitfall: the attention softmax starts its running max at a finite sentinel, −10⁴, instead of −∞.

The mistake: an online (flash-style) softmax keeps m = max(m, max s) over key blocks, starting at m = −10⁴ (a
"safe" large negative number, often chosen to avoid inf − inf). When every logit of a row is below the sentinel,
m stays −10⁴, every exp(s − m) underflows to 0, the normaliser is 0, and the row is 0/0 = NaN. Models without
QK-norm reach logits near −10⁵ where a query anti-aligns with every key.

Why people make it: −inf needs care (a fully masked row gives inf − inf); a finite sentinel makes that case work
and tests with logits of order one never go below it.

Evidence: test-only (finite "−1e4" / "−65504" initial maxima are common in hand-written attention kernels; no public
report is cited here).

Caught by: Block.block_matches_golden — its pinned case with every attention logit ≈ −10⁵.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "SentinelMaxAttention"]

SENTINEL = -1e4


class SentinelMaxAttention(nanolm_core.Attention):
    """softmax with the max taken against a finite sentinel — WRONG (NaN) when every logit is below it."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = self.expand_kv(k), self.expand_kv(v)
        s = self.mask(self.scores(q, k))
        m = s.amax(dim=-1, keepdim=True).clamp_min(SENTINEL)  # the bug: the running max starts at −10⁴
        e = torch.exp(s - m)
        probs = e / e.sum(dim=-1, keepdim=True)
        return probs @ v.to(probs.dtype)


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = SentinelMaxAttention
