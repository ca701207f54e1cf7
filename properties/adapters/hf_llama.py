"""Adapter ``hf-llama``: Hugging Face transformers' Llama modules wrapped to the contract.

- RMSNorm: ``LlamaRMSNorm`` (y = w · fl(x · rsqrt(mean(x²) + eps)): x·r computed in fp32 and rounded to the input
  dtype, then multiplied by w — two roundings, huggingface/transformers#29402).
- SwiGLU: ``LlamaMLP`` (``gate_proj``/``up_proj``/``down_proj`` ↔ ``w_gate``/``w_up``/``w_down``).
- Block: ``LlamaDecoderLayer`` with ``LlamaRotaryEmbedding`` position embeddings and an explicit causal mask,
  attention implementation "eager" (softmax in fp32, probabilities rounded to the input dtype before ·v — HF's
  reference path). Its ``attn`` is ``LlamaAttention`` on the same inputs.

Built by ``properties.adapters.hf`` (the shared HF wrapping) from a ``LlamaConfig`` object (no download).
"""

from __future__ import annotations

from typing import Any

from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import (
    LlamaAttention,
    LlamaDecoderLayer,
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
)

import properties
from nanolm_core import ModelConfig
from properties.adapters import hf

__all__ = ["ATTN_IMPLEMENTATION", "CONVENTIONS", "FAMILY", "Attention", "Block", "RMSNorm", "SwiGLU", "llama_config"]

ATTN_IMPLEMENTATION = hf.ATTN_IMPLEMENTATION
FAMILY = hf.Family(LlamaConfig, LlamaDecoderLayer, LlamaAttention, LlamaRotaryEmbedding, LlamaMLP, LlamaRMSNorm)
RMSNorm, SwiGLU, Attention, Block = hf.components(FAMILY, __name__)

LLAMA_RMSNORM: dict[str, Any] = {
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
}
CONVENTIONS = hf.conventions(
    FAMILY,
    "transformers.models.llama.modeling_llama",
    rmsnorm={**LLAMA_RMSNORM, "source": "transformers.models.llama.modeling_llama.LlamaRMSNorm"},
)


def __getattr__(name: str) -> object:  # names that moved to properties.adapters.hf (properties.MOVED_NAMES)
    return properties.moved_name(__name__, name)


def llama_config(config: ModelConfig) -> LlamaConfig:
    """The LlamaConfig equivalent to ``config`` (bias-free, silu, rotate-half RoPE, eager attention)."""
    return FAMILY.config(config)
