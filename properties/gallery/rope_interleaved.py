"""Pitfall: RoPE in the interleaved convention where the contract says rotate-half.

The mistake: rotating the pairs (x_{2j}, x_{2j+1}) (Meta's original complex-number Llama code,
GPT-J) instead of (x_j, x_{j+K/2}) (HF Llama's ``rotate_half``). Both are valid RoPEs, with the
same frequencies θ_j = theta^(−2j/K); they differ by a fixed permutation of the wq/wk rows, which
checkpoint converters apply — so code and weights from different conventions silently disagree.

Why people make it: papers describe RoPE with complex numbers (consecutive pairs), while the most
popular implementation (HF) uses halves; and at position 0 (or T = 1) both are the identity.

Evidence: the wq/wk permutation in HF's convert_llama_weights_to_hf.py; ports that mix the two.

Caught by: Block.block_matches_golden on any case with T ≥ 2 (its pinned example has T = 4; the golden
block uses rotate-half); Block.block_jacobian_is_identity_plus_branch sees it too.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_sequence, upcast_dtype
from nanolm_core.config import ModelConfig

__all__ = ["Block", "apply_rope_interleaved"]


def apply_rope_interleaved(x: torch.Tensor, theta: float) -> torch.Tensor:
    """(x_{2j}, x_{2j+1}) ↦ rotation by t·θ_j, θ_j = theta^(−2j/K), for x of shape (B, heads, T, K)."""
    T, K = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, K, 2, dtype=x.dtype, device=x.device) / K)  # (K/2,)
    angles = torch.arange(T, dtype=x.dtype, device=x.device)[:, None] * inv_freq  # (T, K/2)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]  # the bug: consecutive pairs, not halves
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class InterleavedRoPEAttention(nanolm_core.Attention):
    """WRONG for this contract: causal GQA attention with interleaved-pair RoPE."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        check_sequence(x, cfg.dim, cfg.max_seq_len, "Attention", self.wq.weight)
        B, T, _ = x.shape
        H, G, K, c = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, upcast_dtype(x.dtype)
        q = self.wq(x).view(B, T, H, K).transpose(1, 2).to(c)  # (B, H, T, K)
        k = self.wk(x).view(B, T, G, K).transpose(1, 2).to(c)  # (B, G, T, K)
        v = self.wv(x).view(B, T, G, K).transpose(1, 2).to(c)
        q, k = apply_rope_interleaved(q, cfg.rope_theta), apply_rope_interleaved(k, cfg.rope_theta)
        k, v = k.repeat_interleave(cfg.n_rep, dim=1), v.repeat_interleave(cfg.n_rep, dim=1)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()  # token t sees s ≤ t
        scores = (q @ k.transpose(-2, -1) / K**0.5).masked_fill(~causal, float("-inf"))
        heads = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, H * K)  # (B, T, H·K)
        return self.wo(heads.to(x.dtype))


class Block(nanolm_core.Block):
    """The reference pre-norm block with interleaved RoPE."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.attn = InterleavedRoPEAttention(config)
