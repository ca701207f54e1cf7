"""Pitfall: attention without the causal mask — every token reads the future.

The mistake: softmax(q·kᵀ/√K)·v over all positions, with the lower-triangular mask left out
(or built with ``triu`` where ``tril`` was meant, or applied to the wrong axis).

Why people make it: the mask is one line that an encoder (BERT, ViT) does not need; with
teacher forcing the model trains *better* than ever — by copying the next token from its input —
and then generates garbage.

Evidence: a classic first-transformer bug; the reason every causal LM implementation tests
"changing token t must not change outputs before t".

Caught by: Block.block_is_causal — perturbing token s must leave outputs 0..s−1 bitwise unchanged.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_sequence, upcast_dtype
from nanolm_core.attention import apply_rope, rope_cos_sin
from nanolm_core.config import ModelConfig

__all__ = ["Block"]


class NonCausalAttention(nanolm_core.Attention):
    """WRONG: out = W_o concat_h softmax(q_h k_{g(h)}ᵀ / √K) v_{g(h)} — no mask."""

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
        k, v = k.repeat_interleave(cfg.n_rep, dim=1), v.repeat_interleave(cfg.n_rep, dim=1)
        probs = torch.softmax(q @ k.transpose(-2, -1) / K**0.5, dim=-1)  # the bug: no causal mask
        heads = (probs @ v).transpose(1, 2).reshape(B, T, H * K)  # (B, T, H·K)
        return self.wo(heads.to(x.dtype))


class Block(nanolm_core.Block):
    """The reference pre-norm block with the mask-less attention above."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.attn = NonCausalAttention(config)
