"""Pitfall: the wrong grouped-query mapping — query head h reads kv head h mod G, not h // (H/G).

The mistake: the G key/value heads are expanded to H by tiling, ``k.repeat(1, H // G, 1, 1)`` (kv heads
0,1,0,1 for H = 4, G = 2), instead of ``repeat_interleave(H // G, dim=1)`` (0,0,1,1). Shapes are identical,
so nothing errors.

Why people make it: ``repeat`` / ``tile`` and ``repeat_interleave`` are one word apart and all "repeat the
heads"; the two agree when G = 1 (MQA) and when G = H (MHA) — exactly the configurations most tests use.
Only a true GQA config (1 < G < H) with real checkpoints shows the difference.

Evidence: onnx/onnx#7274 (the ONNX Attention op tiled the kv heads where torch interleaves them),
apple/axlearn#842; the contract's "query head h reads kv head h // (H/G)" (HF Llama ``repeat_kv``).

Caught by: Block.block_matches_golden, whose pinned example has H = 4, G = 2 (random configs with
1 < G < H are too rare to rely on).
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "TiledKVAttention"]


class TiledKVAttention(nanolm_core.Attention):
    """WRONG: query head h reads kv head h mod G (tiled kv heads)."""

    def expand_kv(self, x: torch.Tensor) -> torch.Tensor:
        return x.repeat(1, self.config.n_rep, 1, 1)  # the bug: tiles, h → h mod G


class Block(nanolm_core.Block):
    """The reference pre-norm block with the tiled-kv attention above."""

    attn_cls = TiledKVAttention
