"""Adapter ``hf-mistral``: Hugging Face transformers' Mistral modules wrapped to the contract.

- RMSNorm: ``MistralRMSNorm`` (Llama's: x·r in fp32 rounded to the input dtype, then ·w — two roundings).
- SwiGLU: ``MistralMLP``.
- Block: ``MistralDecoderLayer``, ``MistralRotaryEmbedding``, eager attention; ``sliding_window=None`` (the
  contract's attention is fully causal; Mistral's default window of 4096 tokens exceeds every tested T anyway).

Built by ``properties.adapters.hf`` from a ``MistralConfig`` object (no download).
"""

from __future__ import annotations

from transformers import MistralConfig
from transformers.models.mistral.modeling_mistral import (
    MistralAttention,
    MistralDecoderLayer,
    MistralMLP,
    MistralRMSNorm,
    MistralRotaryEmbedding,
)

from properties.adapters import hf
from properties.adapters.hf_llama import LLAMA_RMSNORM

__all__ = ["CONVENTIONS", "FAMILY", "Attention", "Block", "RMSNorm", "SwiGLU"]

SOURCE = "transformers.models.mistral.modeling_mistral"
FAMILY = hf.Family(
    MistralConfig, MistralDecoderLayer, MistralAttention, MistralRotaryEmbedding, MistralMLP, MistralRMSNorm,
    extra={"sliding_window": None},
)  # fmt: skip
RMSNorm, SwiGLU, Attention, Block = hf.components(FAMILY, __name__)
CONVENTIONS = hf.conventions(
    FAMILY,
    SOURCE,
    rmsnorm={
        **LLAMA_RMSNORM,
        "weight_mapping": "identity (MistralRMSNorm.weight)",
        "source": f"{SOURCE}.MistralRMSNorm",
    },
    notes="sliding_window=None: fully causal attention, as the contract",
)
