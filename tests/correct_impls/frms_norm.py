"""Correct, built on torch primitives: F.rms_norm, F.linear + F.silu, SDPA attention (GQA via enable_gqa)."""

import torch
import torch.nn.functional as F
from torch import nn

import nanolm_core
from nanolm_core.attention import apply_rope, rope_cos_sin


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.w_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.w_up = nn.Linear(dim, hidden_dim, bias=False)
        self.w_down = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.silu(F.linear(x, self.w_gate.weight)) * F.linear(x, self.w_up.weight), self.w_down.weight)


class _Attention(nanolm_core.Attention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        B, T, _ = x.shape
        H, G, K = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        q = self.wq(x).view(B, T, H, K).transpose(1, 2)
        k = self.wk(x).view(B, T, G, K).transpose(1, 2)
        v = self.wv(x).view(B, T, G, K).transpose(1, 2)
        cos, sin = rope_cos_sin(T, K, cfg.rope_theta, torch.float32 if x.dtype != torch.float64 else x.dtype, x.device)
        q, k = apply_rope(q, cos.to(x.dtype), sin.to(x.dtype)), apply_rope(k, cos.to(x.dtype), sin.to(x.dtype))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=G != H)
        return self.wo(out.transpose(1, 2).reshape(B, T, H * K))


class Block(nn.Module):
    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__()
        self.attn_norm, self.ffn_norm = RMSNorm(config.dim, config.norm_eps), RMSNorm(config.dim, config.norm_eps)
        self.attn = _Attention(config)
        self.ffn = SwiGLU(config.dim, config.ffn_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.attn_norm(x))
        return h + self.ffn(self.ffn_norm(h))
