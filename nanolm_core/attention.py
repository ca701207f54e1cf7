"""Causal grouped-query self-attention with rotary position embeddings (rotate-half, as HF Llama).

Shapes: B batch, T tokens, D = H·K model width, H query heads, G kv heads, K head dim, n_rep = H/G.

Named steps, as pytorch-labs/gpt-fast keeps ``precompute_freqs_cis`` / ``apply_rotary_emb``: free functions
for the maths (``rope_cos_sin``, ``rotate_half``, ``apply_rope``, ``expand_kv``, ``causal_mask``), and one
method of ``Attention`` per step (``heads``, ``rope_tables``, ``rope``, ``expand_kv``, ``scores``, ``mask``,
``attend``) so that a variant overrides one step instead of copying ``forward``.
"""

from __future__ import annotations

import torch
from torch import nn

from nanolm_core._checks import check_instance, check_sequence, upcast_dtype
from nanolm_core.config import ModelConfig

__all__ = ["Attention", "apply_rope", "causal_mask", "expand_kv", "rope_cos_sin", "rotate_half"]


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


def expand_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, G, T, K) → (B, G·n_rep, T, K), head h a copy of kv head h // n_rep (HF ``repeat_kv``)."""
    return x.repeat_interleave(n_rep, dim=1)


def causal_mask(T: int, device: torch.device) -> torch.Tensor:
    """(T, T) bool, True where query t may see key s: s ≤ t."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


class Attention(nn.Module):
    """out = W_o concat_h softmax(mask(q_h k_{g(h)}ᵀ / √K)) v_{g(h)}, g(h) = h // (H/G).

    q = RoPE(W_q x), k = RoPE(W_k x), v = W_v x, positions 0..T−1; mask: token t sees s ≤ t.
    Casts: the four projections run in the module dtype; RoPE (tables and rotation), scores, the
    max-subtracted softmax and probs·v run in c = fp32 (fp64 for fp64 input) — q and k are upcast by
    ``rope``, v by ``attend``; the heads are rounded to x.dtype before W_o.
    Accepts a ``ModelConfig`` (else TypeError naming ``config``); x (B, T, D), T ≤ max_seq_len, in the
    module's floating dtype and on its device.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        check_instance(config, ModelConfig, "config", "Attention")
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
        q, k, v = self.heads(x)  # (B, H, T, K), (B, G, T, K), (B, G, T, K)
        cos, sin = self.rope_tables(T, upcast_dtype(x.dtype), x.device)  # (T, K)
        q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        out = self.attend(q, k, v)  # (B, H, T, K)
        return self.wo(out.transpose(1, 2).reshape(B, T, cfg.n_heads * cfg.head_dim).to(x.dtype))

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v = W_q x, W_k x, W_v x split into heads (B, heads, T, K), in the module dtype."""
        B, T, _ = x.shape
        H, G, K = self.config.n_heads, self.config.n_kv_heads, self.config.head_dim
        q = self.wq(x).view(B, T, H, K).transpose(1, 2)
        k = self.wk(x).view(B, T, G, K).transpose(1, 2)
        v = self.wv(x).view(B, T, G, K).transpose(1, 2)
        return q, k, v

    def rope_tables(self, T: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, ...]:
        """cos, sin (T, K) for positions 0..T−1 with base ``config.rope_theta``."""
        return rope_cos_sin(T, self.config.head_dim, self.config.rope_theta, dtype, device)

    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Rotate-half RoPE of q or k (B, heads, T, K), upcast to the tables' dtype c."""
        return apply_rope(x.to(cos.dtype), cos, sin)

    def expand_kv(self, x: torch.Tensor) -> torch.Tensor:
        """k or v (B, G, T, K) → (B, H, T, K): query head h reads kv head h // (H/G)."""
        return expand_kv(x, self.config.n_rep)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """q·kᵀ/√K, (B, H, T, T)."""
        return q @ k.transpose(-2, -1) / self.config.head_dim**0.5

    def mask(self, scores: torch.Tensor) -> torch.Tensor:
        """−inf where key s is after query t (causal)."""
        T = scores.shape[-1]
        return scores.masked_fill(~causal_mask(T, scores.device), float("-inf"))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """softmax(mask(scores(q, k)))·v over the expanded kv heads, (B, H, T, K), in the dtype of q and k."""
        k, v = self.expand_kv(k), self.expand_kv(v)
        probs = torch.softmax(self.mask(self.scores(q, k)), dim=-1)  # subtracts the row max internally
        return probs @ v.to(probs.dtype)
