"""Pitfall: the attention kernel runs one program per (sequence, head) on a grid axis capped at 65,535.

The mistake: (batch, head) pairs are flattened onto the grid's y axis; past 65,535 programs — B·H > 65,535, e.g.
a batch of 2,048 short sequences on 32 heads — the remaining heads are never computed and their output stays
zero. Everything below that batch size is exact.

Why people make it: B·H is small in training (a few hundred) and only batched inference of many short requests
(embedding, reranking, speculative drafts) reaches it.

Evidence: FlashML-org/FreeToken#186 (a flat index launched on the grid's z axis: calls past 65,535 programs
failed), ml-explore/mlx#2267 (a y grid dimension past 65,535).

Caught by: Block.block_matches_golden_at_code_path_sizes — 32,769 sequences on 2 heads, the last ones judged.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "CappedGridAttention"]

GRID_LIMIT = 65_535


class CappedGridAttention(nanolm_core.Attention):
    """The reference attention, but heads of (sequence, head) programs past 65,535 are zero — WRONG."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = super().attend(q, k, v)  # (B, H, T, K)
        B, H = out.shape[:2]
        program = torch.arange(B * H, device=out.device).reshape(B, H, 1, 1)
        return out * (program < GRID_LIMIT).to(out.dtype)  # the bug: no program for the rest


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = CappedGridAttention
