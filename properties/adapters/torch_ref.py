"""Adapter ``torch``: PyTorch's own building blocks wrapped to the contract.

- RMSNorm: ``torch.nn.RMSNorm`` (``F.rms_norm``) with eps passed explicitly — ``nn.RMSNorm(eps=None)``
  would use the machine epsilon of the *input* dtype (pytorch/pytorch#142848), not the contract's 1e-6.
- SwiGLU: ``F.silu`` + ``F.linear``.
- Block: the contract's pre-norm block from torch pieces: the reference ``nanolm_core.Block`` with these
  parts, its attention the reference's steps with ``F.scaled_dot_product_attention`` (``is_causal=True``,
  ``enable_gqa``) as ``attend`` and RoPE rounded to the module dtype.

``CONVENTIONS`` follows the schema documented in ``properties/adapters/__init__.py``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

import nanolm_core

__all__ = ["CONVENTIONS", "Attention", "Block", "RMSNorm", "SwiGLU"]

CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = x · rsqrt(mean(x²) + eps) · w",
        "rounding": "one rounding: the whole product is computed in fp32 (fp64 for fp64) and rounded once",
        "compute": "fp32 for fp16/bf16/fp32 input (torch opmath), fp64 for fp64",
        "compute_dtype": {"fp64": "fp64", "fp32": "fp32", "fp16": "fp32", "bf16": "fp32"},
        "roundings": 1,
        "eps_default": 1e-6,
        "eps_placement": "inside",
        "weight_offset": 0.0,
        "weight_mapping": "identity (nn.RMSNorm.weight)",
        "source": "torch.nn.RMSNorm / torch.nn.functional.rms_norm",
    },
    "SwiGLU": {
        "formula": "y = W_down (silu(W_gate x) ⊙ W_up x)",
        "rounding": "module dtype: each linear, silu and the product round to the input dtype (3 + 2 roundings)",
        "compute": "module dtype (matmuls accumulate in fp32 for 16-bit dtypes)",
        "compute_dtype": "input",
        "source": "torch.nn.functional.silu + torch.nn.functional.linear",
    },
    "Block": {
        "formula": "h = x + attn(attn_norm(x)); out = h + ffn(ffn_norm(h))",
        "rounding": "projections in module dtype; RoPE in fp32 (fp64 for fp64) rounded to the module dtype; "
        "scaled_dot_product_attention in the module dtype (fp32 softmax internally)",
        "compute": "module dtype, fp32 for RoPE",
        "compute_dtype": "input",
        "rope_layout": "rotate-half",
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


class SwiGLU(nanolm_core.SwiGLU):
    """y = W_down (silu(W_gate x) ⊙ W_up x) from ``F.linear`` and ``F.silu``, in the module dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, self.w_gate.weight), F.linear(x, self.w_up.weight)  # (..., F)
        return F.linear(F.silu(gate) * up, self.w_down.weight)


class Attention(nanolm_core.Attention):
    """Causal GQA: out = W_o sdpa(RoPE(W_q x), RoPE(W_k x), W_v x), query head h reads kv head h // (H/G).

    The reference's steps, two of them replaced: RoPE is computed in c = fp32 (fp64) and rounded to the module
    dtype, and ``attend`` is ``F.scaled_dot_product_attention`` (it expands the kv heads itself) in that dtype.
    """

    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        return super().rope(x, cos, sin).to(x.dtype)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        gqa = self.config.n_kv_heads != self.config.n_heads
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)  # (B, H, T, K)


class Block(nanolm_core.Block):
    """Pre-norm block h = x + attn(attn_norm(x)), out = h + ffn(ffn_norm(h)) of the torch parts above."""

    norm_cls, attn_cls, ffn_cls = RMSNorm, Attention, SwiGLU
