"""Adapter ``torch``: PyTorch's own building blocks wrapped to the contract.

- RMSNorm: ``torch.nn.RMSNorm`` (``F.rms_norm``) with eps passed explicitly — ``nn.RMSNorm(eps=None)``
  would use the machine epsilon of the *input* dtype (pytorch/pytorch#142848), not the contract's 1e-6.
- SwiGLU: ``F.silu`` + ``F.linear``.
- Block: the contract's pre-norm block from torch pieces: ``F.scaled_dot_product_attention``
  (``is_causal=True``, ``enable_gqa=True``) after a rotate-half RoPE written here.

``CONVENTIONS`` follows the schema documented in ``properties/adapters/__init__.py``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nanolm_core import ModelConfig

__all__ = ["CONVENTIONS", "Attention", "Block", "RMSNorm", "SwiGLU"]

CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = x · rsqrt(mean(x²) + eps) · w",
        "rounding": "one rounding: the whole product is computed in fp32 (fp64 for fp64) and rounded once",
        "compute_dtype": "fp32 for fp16/bf16/fp32 input (torch opmath), fp64 for fp64",
        "eps_default": 1e-6,
        "eps_placement": "inside the square root",
        "weight_offset": 0.0,
        "weight_mapping": "identity (nn.RMSNorm.weight)",
        "source": "torch.nn.RMSNorm / torch.nn.functional.rms_norm",
    },
    "SwiGLU": {
        "formula": "y = W_down (silu(W_gate x) ⊙ W_up x)",
        "rounding": "module dtype: each linear, silu and the product round to the input dtype (3 + 2 roundings)",
        "compute_dtype": "module dtype (matmuls accumulate in fp32 for 16-bit dtypes)",
        "source": "torch.nn.functional.silu + torch.nn.functional.linear",
    },
    "Block": {
        "formula": "h = x + attn(attn_norm(x)); out = h + ffn(ffn_norm(h))",
        "rounding": "projections in module dtype; RoPE in fp32 (fp64 for fp64) rounded to the module dtype; "
        "scaled_dot_product_attention in the module dtype (fp32 softmax internally)",
        "compute_dtype": "module dtype, fp32 for RoPE",
        "attention": "F.scaled_dot_product_attention(is_causal=True, enable_gqa=True)",
        "rope": "rotate-half, angles t · theta^(−2j/K) in fp32 (fp64 for fp64)",
        "source": "torch.nn.functional",
    },
}


class RMSNorm(nn.RMSNorm):
    """y = x · rsqrt(mean(x², dim=−1) + eps) ⊙ w via ``F.rms_norm``.

    x: (..., D); w: (D,) ``weight`` (init 1); eps inside the square root, always the given float.
    Casts: torch's CPU/CUDA kernels compute x·r·w in fp32 (fp64 for fp64) and round once to x.dtype.
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__(dim, eps=float(eps))  # explicit: eps=None would mean finfo(x.dtype).eps
        self.dim = dim


class SwiGLU(nn.Module):
    """y = W_down (silu(W_gate x) ⊙ W_up x) from ``F.linear`` and ``F.silu``, in the module dtype."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.dim, self.hidden_dim = dim, hidden_dim
        self.w_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.w_up = nn.Linear(dim, hidden_dim, bias=False)
        self.w_down = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, self.w_gate.weight), F.linear(x, self.w_up.weight)  # (..., F)
        return F.linear(F.silu(gate) * up, self.w_down.weight)


def _rope(x: torch.Tensor, theta: float) -> torch.Tensor:
    """RoPE(x) = x ⊙ cos + rotate_half(x) ⊙ sin for x (B, heads, T, K), in c = fp32 (fp64), rounded to x.dtype."""
    T, K = x.shape[-2], x.shape[-1]
    c = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / theta ** (torch.arange(0, K, 2, dtype=c, device=x.device) / K)  # (K/2,)
    angles = torch.arange(T, dtype=c, device=x.device)[:, None] * inv_freq  # (T, K/2)
    angles = torch.cat((angles, angles), dim=-1)  # (T, K)
    xc = x.to(c)
    x1, x2 = xc.chunk(2, dim=-1)
    return (xc * angles.cos() + torch.cat((-x2, x1), dim=-1) * angles.sin()).to(x.dtype)


class Attention(nn.Module):
    """Causal GQA: out = W_o sdpa(RoPE(W_q x), RoPE(W_k x), W_v x), query head h reads kv head h // (H/G)."""

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
        B, T, _ = x.shape
        H, G, K = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        q = _rope(self.wq(x).view(B, T, H, K).transpose(1, 2), cfg.rope_theta)  # (B, H, T, K)
        k = _rope(self.wk(x).view(B, T, G, K).transpose(1, 2), cfg.rope_theta)  # (B, G, T, K)
        v = self.wv(x).view(B, T, G, K).transpose(1, 2)  # (B, G, T, K)
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=G != H)  # (B, H, T, K)
        return self.wo(heads.transpose(1, 2).reshape(B, T, H * K))


class Block(nn.Module):
    """Pre-norm block h = x + attn(attn_norm(x)), out = h + ffn(ffn_norm(h)), residuals in x.dtype."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(config.dim, config.norm_eps)
        self.attn = Attention(config)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)
        self.ffn = SwiGLU(config.dim, config.ffn_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3:
            raise ValueError(f"Block: input must have shape (B, T, D), got {tuple(x.shape)}")
        h = x + self.attn(self.attn_norm(x))  # (B, T, D)
        return h + self.ffn(self.ffn_norm(h))
