"""Adapter ``hf-qwen2``: Hugging Face transformers' Qwen2 modules wrapped to the contract.

- RMSNorm: ``Qwen2RMSNorm`` (Llama's: x·r in fp32 rounded to the input dtype, then ·w — two roundings).
- SwiGLU: ``Qwen2MLP``.
- Block: ``Qwen2DecoderLayer`` (full attention: ``use_sliding_window=False``), ``Qwen2RotaryEmbedding``, eager.
  Qwen2's q/k/v projections carry biases, which the contract does not have: they are held at exactly zero
  (x·Wᵀ + 0 is x·Wᵀ bit for bit), not parameters (``state_dict`` has the contract's names only).

Built by ``properties.adapters.hf`` from a ``Qwen2Config`` object (no download).
"""

from __future__ import annotations

from transformers import Qwen2Config
from transformers.models.qwen2.modeling_qwen2 import (
    Qwen2Attention,
    Qwen2DecoderLayer,
    Qwen2MLP,
    Qwen2RMSNorm,
    Qwen2RotaryEmbedding,
)

from properties.adapters import hf
from properties.adapters.hf_llama import LLAMA_RMSNORM

__all__ = ["CONVENTIONS", "FAMILY", "Attention", "Block", "RMSNorm", "SwiGLU"]

SOURCE = "transformers.models.qwen2.modeling_qwen2"
FAMILY = hf.Family(
    Qwen2Config, Qwen2DecoderLayer, Qwen2Attention, Qwen2RotaryEmbedding, Qwen2MLP, Qwen2RMSNorm,
    zeros=("q_proj.bias", "k_proj.bias", "v_proj.bias"),
    extra={"use_sliding_window": False},
)  # fmt: skip
RMSNorm, SwiGLU, Attention, Block = hf.components(FAMILY, __name__)
CONVENTIONS = hf.conventions(
    FAMILY,
    SOURCE,
    rmsnorm={**LLAMA_RMSNORM, "weight_mapping": "identity (Qwen2RMSNorm.weight)", "source": f"{SOURCE}.Qwen2RMSNorm"},
    notes="q_proj/k_proj/v_proj biases held at zero (the contract is bias-free); full attention, no sliding window",
)
