"""Pitfall: attention over a long prompt is computed in chunks of 4,096 queries that never read earlier chunks' keys.

The mistake: a long prefill is split into chunks of 4,096 tokens (memory), and each chunk's attention is computed
over the chunk's own keys only — the keys and values of earlier chunks, already in the cache, are not read. Token
4,096 onwards cannot see token 0. Every prompt up to 4,096 tokens is one chunk and exact.

Why people make it: the chunk's queries and keys are sliced together; reading the cache for the earlier chunks is
a second code path that prompts shorter than a chunk never take.

Evidence: kekzl/imp#117 (chunked prefill extracted Q/K/V over the current chunk only: queries could not attend to
the positions of earlier chunks; the fix made the chunk 4,096 tokens, so only longer prompts reach the bug),
kekzl/imp#114.

Caught by: Block.block_every_earlier_token_reaches_the_last — its pinned case at T = 4097 (fp32): token 0 must
reach token 4096.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "ChunkedAttention"]

CHUNK = 4096


class ChunkedAttention(nanolm_core.Attention):
    """Causal within each chunk of 4,096 positions; WRONG: blind to every earlier chunk."""

    def mask(self, scores: torch.Tensor) -> torch.Tensor:
        scores = super().mask(scores)
        T = scores.shape[-1]
        chunk = torch.arange(T, device=scores.device) // CHUNK
        other = chunk.unsqueeze(-1) != chunk.unsqueeze(0)  # (T, T): key in another chunk than the query
        return scores.masked_fill(other, float("-inf"))  # the bug: earlier chunks' keys are not read


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = ChunkedAttention
