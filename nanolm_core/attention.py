"""Causal grouped-query self-attention with rotary position embeddings (rotate-half, as HF Llama).

Shapes: B batch, T tokens, D = H·K model width, H query heads, G kv heads, K head dim.
"""

from __future__ import annotations

import torch
from torch import nn

from nanolm_core._checks import check_sequence, upcast_dtype
from nanolm_core.config import ModelConfig

__all__ = ["Attention", "apply_rope", "rope_cos_sin", "rotate_half"]


def rope_cos_sin(T: int, K: int, theta: float, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, ...]:
    """cos, sin of angle[t, j] = t · theta^(−2(j mod K/2)/K), shape (T, K), computed in ``dtype``."""
    inv_freq = 1.0 / theta ** (torch.arange(0, K, 2, dtype=dtype, device=device) / K)  # (K/2,), as HF
    angles = torch.arange(T, dtype=dtype, device=device)[:, None] * inv_freq  # (T, K/2)
    angles = torch.cat((angles, angles), dim=-1)  # (T, K): rotate-half pairs j with j + K/2
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x₁, x₂) → (−x₂, x₁) on the two halves of the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE(x) = x ⊙ cos + rotate_half(x) ⊙ sin, for x of shape (B, heads, T, K)."""
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    """out = W_o concat_h softmax(mask(q_h k_{g(h)}ᵀ / √K)) v_{g(h)}, g(h) = h // (H/G).

    q = RoPE(W_q x), k = RoPE(W_k x), v = W_v x, positions 0..T−1; mask: token t sees s ≤ t.
    Casts: the four projections run in the module dtype; RoPE, scores, the max-subtracted softmax
    and probs·v run in c = fp32 (fp64 for fp64 input); the heads are rounded to x.dtype before W_o.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        D, H, G, K = config.dim, config.n_heads, config.n_kv_heads, config.head_dim
        self.wq = nn.Linear(D, H * K, bias=False)
        self.wk = nn.Linear(D, G * K, bias=False)
        self.wv = nn.Linear(D, G * K, bias=False)
        self.wo = nn.Linear(H * K, D, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        check_sequence(x, cfg.dim, cfg.max_seq_len, "Attention", self.wq.weight)
        B, T, _ = x.shape
        H, G, K = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        c = upcast_dtype(x.dtype)
        q = self.wq(x).view(B, T, H, K).transpose(1, 2).to(c)  # (B, H, T, K)
        k = self.wk(x).view(B, T, G, K).transpose(1, 2).to(c)  # (B, G, T, K)
        v = self.wv(x).view(B, T, G, K).transpose(1, 2).to(c)  # (B, G, T, K)
        cos, sin = rope_cos_sin(T, K, cfg.rope_theta, c, x.device)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k, v = k.repeat_interleave(cfg.n_rep, dim=1), v.repeat_interleave(cfg.n_rep, dim=1)  # head h reads h // n_rep
        scores = q @ k.transpose(-2, -1) / K**0.5  # (B, H, T, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        probs = torch.softmax(scores, dim=-1)  # subtracts the row max internally
        heads = (probs @ v).transpose(1, 2).reshape(B, T, H * K)  # (B, T, H·K)
        return self.wo(heads.to(x.dtype))
