"""Pitfall: the wrong grouped-query mapping — query head h reads kv head h mod G, not h // (H/G).

The mistake: the G key/value heads are expanded to H with ``k.repeat(1, H // G, 1, 1)`` (tiling:
kv heads 0,1,0,1 for H = 4, G = 2) instead of ``repeat_interleave(H // G, dim=1)`` (0,0,1,1).
Shapes are identical, so nothing errors.

Why people make it: ``repeat`` and ``repeat_interleave`` are one word apart and both "repeat the
heads"; the two agree when G = 1 (MQA) and when G = H (MHA) — exactly the configurations most
tests use. Only a true GQA config (1 < G < H) with real checkpoints shows the difference.

Evidence: the contract's "query head h reads kv head h // (H/G)" (HF Llama ``repeat_kv``); the
same mix-up between tiling and interleaving appears in ports of Llama-2/3 GQA.

Caught by: Block.block_matches_golden, whose pinned example has H = 4, G = 2 (random configs with
1 < G < H are too rare to rely on).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_sequence, upcast_dtype
from nanolm_core.attention import apply_rope, rope_cos_sin
from nanolm_core.config import ModelConfig

__all__ = ["Block"]


class TiledKVAttention(nanolm_core.Attention):
    """WRONG: query head h reads kv head h mod G (tiled kv heads)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        check_sequence(x, cfg.dim, cfg.max_seq_len, "Attention", self.wq.weight)
        B, T, _ = x.shape
        H, G, K, c = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, upcast_dtype(x.dtype)
        q = self.wq(x).view(B, T, H, K).transpose(1, 2).to(c)  # (B, H, T, K)
        k = self.wk(x).view(B, T, G, K).transpose(1, 2).to(c)  # (B, G, T, K)
        v = self.wv(x).view(B, T, G, K).transpose(1, 2).to(c)
        cos, sin = rope_cos_sin(T, K, cfg.rope_theta, c, x.device)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k, v = k.repeat(1, cfg.n_rep, 1, 1), v.repeat(1, cfg.n_rep, 1, 1)  # the bug: h → h mod G
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()  # token t sees s ≤ t
        scores = (q @ k.transpose(-2, -1) / K**0.5).masked_fill(~causal, float("-inf"))
        heads = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, H * K)  # (B, T, H·K)
        return self.wo(heads.to(x.dtype))


class Block(nanolm_core.Block):
    """The reference pre-norm block with the tiled-kv attention above."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.attn = TiledKVAttention(config)
