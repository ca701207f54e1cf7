"""Pitfall: a Block that declares itself batch-invariant, with an FFN whose work division follows the batch size.

The mistake: the block runs each sequence's attention on its own (the same work whatever the batch) and
declares ``batch_invariant: True`` — but the FFN of the whole batch is one fused call whose down projection
splits its sum over the F hidden units into min(sequences, 4) chunks. A different number of chunks rounds
differently, so a sequence's output bits depend on which other requests share its batch.

Why people make it: the attention is where batch invariance is usually discussed (split-KV); the FFN looks like
a plain GEMM, and a GEMM picks its split by the problem size.

Evidence: pegainfer-project/pegainfer#414 (qwen3 batched decode: a request's tokens depend on its batch-mates),
deepseek-ai/FlashMLA#212 (a row's output depends on its batchmates by 1-2 ULP, flipping argmax at near ties).

Caught by: Block.block_is_batch_invariant — out(x[:k]) == out(x)[:k] bitwise over the batch dimension, required
because the module declares ``batch_invariant: True`` (undeclared, the law only measures it). Shown in fp32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core
from properties.gallery.swiglu_batch_variant import split_down

__all__ = ["CONVENTIONS", "Block"]

CONVENTIONS = {"Block": {"batch_invariant": True, "notes": "one sequence at a time (claimed batch-invariant)"}}


class Block(nanolm_core.Block):
    """WRONG for its declaration: attention per sequence, the FFN's F-sum split in min(sequences, 4) chunks."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cat([seq + self.attn(self.attn_norm(seq)) for seq in x.split(1)])  # (B, T, D), per sequence
        chunks = max(1, min(x.shape[0], 4))  # the bug: the FFN's work division follows the batch size
        ffn, rows = self.ffn, self.ffn_norm(h).reshape(-1, h.shape[-1])
        out = []
        for row in rows.split(1):  # (1, D)
            z = F.silu(F.linear(row, ffn.w_gate.weight)) * F.linear(row, ffn.w_up.weight)  # (1, F)
            out.append(split_down(z, ffn.w_down.weight, chunks))
        return h + torch.cat(out).reshape(h.shape)
