"""Pitfall: attention scores without the 1/√K scale.

The mistake: softmax(q·kᵀ)·v instead of softmax(q·kᵀ/√K)·v. With unit-variance q and k the dot
product has variance K, so unscaled scores are √K times too large (8× for K = 64): the softmax
saturates towards one-hot and its gradient vanishes.

Why people make it: the scale is one easy-to-drop factor, fused attention APIs apply it by
default (so people "remove the duplicate" in the wrong place), and a small model still trains.

Evidence: Vaswani et al. (2017) §3.2.1 explains the factor; double / missing scaling is a frequent
bug when switching between manual attention and ``scaled_dot_product_attention``.

Caught by: Block.block_matches_golden on any case with T ≥ 2 (its pinned example has T = 4; with one
token the softmax is 1 whatever the scale); Block.block_jacobian_is_identity_plus_branch sees it too.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_sequence, upcast_dtype
from nanolm_core.attention import apply_rope, rope_cos_sin
from nanolm_core.config import ModelConfig

__all__ = ["Block"]


class UnscaledAttention(nanolm_core.Attention):
    """WRONG: out = W_o concat_h softmax(mask(q_h k_{g(h)}ᵀ)) v_{g(h)} — no 1/√K."""

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
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()  # token t sees s ≤ t
        scores = (q @ k.transpose(-2, -1)).masked_fill(~causal, float("-inf"))  # the bug: "/ K**0.5" is missing
        heads = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, H * K)  # (B, T, H·K)
        return self.wo(heads.to(x.dtype))


class Block(nanolm_core.Block):
    """The reference pre-norm block with unscaled attention."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.attn = UnscaledAttention(config)
