"""Adapter ``hf-llama``: Hugging Face transformers' Llama modules wrapped to the contract.

- RMSNorm: ``LlamaRMSNorm`` itself (its parameter is already called ``weight``, init ones).
- SwiGLU: ``LlamaMLP`` (``gate_proj``/``up_proj``/``down_proj`` ↔ ``w_gate``/``w_up``/``w_down``).
- Block: ``LlamaDecoderLayer`` with ``LlamaRotaryEmbedding`` position embeddings and an explicit causal mask,
  attention implementation ``ATTN_IMPLEMENTATION`` ("eager": softmax in fp32, probabilities rounded to the
  input dtype before ·v — HF's reference path). Its ``attn`` is ``LlamaAttention`` on the same inputs.

Each component subclasses the reference (``nanolm_core``) for its contract-named parameters and replaces the
arithmetic with HF's.

The HF modules are built from a ``LlamaConfig`` object (no download) on the meta device and run on the
adapter's contract-named parameters (see ``properties.adapters``). Requires ``transformers``.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import (
    LlamaAttention,
    LlamaDecoderLayer,
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
)

import nanolm_core
from nanolm_core import ModelConfig
from properties.adapters import call_with, hide

__all__ = [
    "ATTN_IMPLEMENTATION",
    "CONVENTIONS",
    "Attention",
    "Block",
    "RMSNorm",
    "SwiGLU",
    "llama_config",
    "llama_inputs",
]

ATTN_IMPLEMENTATION = "eager"

CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = w · fl(x · rsqrt(mean(x²) + eps))",
        "rounding": "two roundings: x·r is computed in fp32 and rounded to the input dtype, then multiplied by w "
        "in the weight's dtype (huggingface/transformers#29402)",
        "compute": "fp32 for every input dtype — fp64 input is downcast to fp32 (x.to(torch.float32))",
        "compute_dtype": "fp32",
        "roundings": 2,
        "eps_default": 1e-6,
        "eps_placement": "inside",
        "weight_offset": 0.0,
        "weight_mapping": "identity (LlamaRMSNorm.weight)",
        "source": "transformers.models.llama.modeling_llama.LlamaRMSNorm",
    },
    "SwiGLU": {
        "formula": "y = down_proj(silu(gate_proj(x)) ⊙ up_proj(x))",
        "rounding": "module dtype: each linear, silu and the product round to the input dtype",
        "compute": "module dtype",
        "compute_dtype": "input",
        "weight_mapping": "w_gate ↔ gate_proj, w_up ↔ up_proj, w_down ↔ down_proj (exact, same tensors)",
        "source": "transformers.models.llama.modeling_llama.LlamaMLP (hidden_act='silu')",
    },
    "Block": {
        "formula": "h = x + self_attn(input_layernorm(x)); out = h + mlp(post_attention_layernorm(h))",
        "rounding": "RoPE cos/sin computed in fp32 and rounded to the input dtype, applied in the input dtype; "
        "scores in the input dtype, softmax in fp32 rounded to the input dtype, then probs·v",
        "compute": "module dtype; fp32 for RoPE angles and softmax, and for the norms (fp64 input too)",
        "compute_dtype": {"fp64": "fp32"},
        "rope_layout": "rotate-half",
        "attention": f"{ATTN_IMPLEMENTATION} with an additive causal mask (finfo(dtype).min above the diagonal)",
        "rope": "rotate-half, LlamaRotaryEmbedding (rope_type 'default'), inv_freq kept in fp32",
        "weight_mapping": "attn_norm ↔ input_layernorm, attn.w{q,k,v,o} ↔ self_attn.{q,k,v,o}_proj, "
        "ffn_norm ↔ post_attention_layernorm, ffn.w_* ↔ mlp.*_proj",
        "source": "transformers.models.llama.modeling_llama.LlamaDecoderLayer",
    },
}


def llama_config(config: ModelConfig) -> LlamaConfig:
    """The LlamaConfig equivalent to ``config`` (bias-free, silu, rotate-half RoPE, eager attention)."""
    return LlamaConfig(
        hidden_size=config.dim,
        intermediate_size=config.ffn_dim,
        num_attention_heads=config.n_heads,
        num_key_value_heads=config.n_kv_heads,
        head_dim=config.head_dim,
        rms_norm_eps=config.norm_eps,
        rope_theta=config.rope_theta,
        max_position_embeddings=config.max_seq_len,
        vocab_size=config.vocab_size,
        hidden_act="silu",
        attention_bias=False,
        mlp_bias=False,
        attn_implementation=ATTN_IMPLEMENTATION,
    )


class RMSNorm(LlamaRMSNorm):
    """HF ``LlamaRMSNorm``: y = w · fl(x · rsqrt(mean(x²) + eps)).

    x: (..., D); w: (D,) ``weight`` (init 1); eps inside the square root. Casts: x is converted to fp32
    (also when it is fp64), x·r is computed in fp32 and rounded to x.dtype, then multiplied by w (a second
    rounding, in the promoted dtype of w and x: with the module moved to x.dtype, that is x.dtype).
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__(dim, eps=eps)
        self.dim, self.eps = dim, eps


class SwiGLU(nanolm_core.SwiGLU):
    """HF ``LlamaMLP`` on contract-named weights: y = W_down (silu(W_gate x) ⊙ W_up x), in the module dtype."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__(dim, hidden_dim)
        cfg = LlamaConfig(
            hidden_size=dim,
            intermediate_size=hidden_dim,
            hidden_act="silu",
            mlp_bias=False,
            num_attention_heads=1,
            num_key_value_heads=1,
            head_dim=2,
        )  # unused by the MLP, but
        # LlamaConfig validates them: one head divides every D, and RoPE wants an even head_dim
        with torch.device("meta"):
            hide(self, "_hf", LlamaMLP(cfg))

    def hf_params(self, prefix: str = "") -> dict[str, torch.Tensor]:
        """HF parameter names (under ``prefix``) → this module's tensors."""
        return {
            f"{prefix}gate_proj.weight": self.w_gate.weight,
            f"{prefix}up_proj.weight": self.w_up.weight,
            f"{prefix}down_proj.weight": self.w_down.weight,
        }

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._hf, self.hf_params(), x)


def causal_mask(T: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """HF's eager additive mask, shape (1, 1, T, T): 0 where key s ≤ query t, finfo(dtype).min above the diagonal."""
    blocked = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
    mask = torch.zeros(T, T, dtype=dtype, device=device).masked_fill(blocked, torch.finfo(dtype).min)
    return mask[None, None]


def llama_inputs(rotary: LlamaRotaryEmbedding, x: torch.Tensor) -> dict[str, Any]:
    """What HF's attention needs beside x (B, T, D): positions 0..T−1, their cos/sin (two (B, T, K) tensors in
    x.dtype) and the explicit causal mask."""
    B, T, _ = x.shape
    position_ids = torch.arange(T, device=x.device)[None].expand(B, T)  # (B, T)
    return {
        "attention_mask": causal_mask(T, x.dtype, x.device),
        "position_ids": position_ids,
        "position_embeddings": rotary(x, position_ids),
    }


class Attention(nanolm_core.Attention):
    """HF ``LlamaAttention`` on the contract's ``wq``, ``wk``, ``wv``, ``wo`` (the reference's parameters).

    Cos/sin from ``LlamaRotaryEmbedding`` (fp32 angles, rounded to x.dtype), kept out of the module tree so
    that ``.to(dtype=bf16)`` cannot round its fp32 ``inv_freq``. ``Block`` runs the same arithmetic inside
    ``LlamaDecoderLayer``.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        cfg = llama_config(config)
        hide(self, "_rotary", LlamaRotaryEmbedding(cfg))
        with torch.device("meta"):
            hide(self, "_hf", LlamaAttention(cfg, layer_idx=0))

    def hf_params(self, prefix: str = "") -> dict[str, torch.Tensor]:
        return {f"{prefix}{p}_proj.weight": getattr(self, f"w{p}").weight for p in "qkvo"}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = call_with(self._hf, self.hf_params(), x, **llama_inputs(self._rotary, x))
        return out


class Block(nanolm_core.Block):
    """HF ``LlamaDecoderLayer``: h = x + attn(attn_norm(x)), out = h + ffn(ffn_norm(h)), on contract names.

    The parts above hold the contract's parameters; the decoder layer runs on them with the attention's
    positions, cos/sin and causal mask (``llama_inputs``).
    """

    norm_cls, attn_cls, ffn_cls = RMSNorm, Attention, SwiGLU

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        with torch.device("meta"):
            hide(self, "_hf", LlamaDecoderLayer(llama_config(config), layer_idx=0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3:
            raise ValueError(f"Block: input must have shape (B, T, D), got {tuple(x.shape)}")
        if x.shape[1] > self.config.max_seq_len:
            raise ValueError(f"Block: sequence length T={x.shape[1]} exceeds max_seq_len={self.config.max_seq_len}")
        params = {
            "input_layernorm.weight": self.attn_norm.weight,
            "post_attention_layernorm.weight": self.ffn_norm.weight,
            **self.attn.hf_params("self_attn."),
            **self.ffn.hf_params("mlp."),
        }
        return call_with(self._hf, params, x, **llama_inputs(self.attn._rotary, x))
