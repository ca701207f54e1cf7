"""Adapter ``hf-phi3``: Hugging Face transformers' Phi-3 modules wrapped to the contract — fused weights.

- RMSNorm: ``Phi3RMSNorm`` (Llama's: x·r in fp32 rounded to the input dtype, then ·w — two roundings).
- SwiGLU: ``Phi3MLP``: one fused ``gate_up_proj`` (2F, D) = cat(w_gate, w_up), split with ``chunk(2)``; computes
  up ⊙ silu(gate) (the same products).
- Block: ``Phi3DecoderLayer``: one fused ``qkv_proj`` (H·K + 2·G·K, D) = cat(wq, wk, wv), sliced by HF;
  ``Phi3RotaryEmbedding`` (partial_rotary_factor 1: RoPE over the whole head), eager attention.

The contract's parameters stay separate (``state_dict`` names are the contract's); at each call the adapter hands
Phi-3 their concatenation (``kit.Fuse``: differentiable, so gradients reach each part). Built by
``properties.adapters.hf`` from a ``Phi3Config`` object (no download).
"""

from __future__ import annotations

from transformers import Phi3Config
from transformers.models.phi3.modeling_phi3 import (
    Phi3Attention,
    Phi3DecoderLayer,
    Phi3MLP,
    Phi3RMSNorm,
    Phi3RotaryEmbedding,
)

from properties.adapters import hf
from properties.adapters.hf_llama import LLAMA_RMSNORM
from properties.adapters.kit import Fuse

__all__ = ["ATTENTION_NAMES", "CONVENTIONS", "FAMILY", "MLP_NAMES", "Attention", "Block", "RMSNorm", "SwiGLU"]

SOURCE = "transformers.models.phi3.modeling_phi3"
ATTENTION_NAMES = {"qkv_proj.weight": Fuse("wq.weight", "wk.weight", "wv.weight"), "o_proj.weight": "wo.weight"}
MLP_NAMES = {"gate_up_proj.weight": Fuse("w_gate.weight", "w_up.weight"), "down_proj.weight": "w_down.weight"}
FAMILY = hf.Family(
    Phi3Config, Phi3DecoderLayer, Phi3Attention, Phi3RotaryEmbedding, Phi3MLP, Phi3RMSNorm,
    attn_names=ATTENTION_NAMES,
    mlp_names=MLP_NAMES,
    extra={"pad_token_id": None, "bos_token_id": None, "eos_token_id": None, "sliding_window": None},
)  # fmt: skip
RMSNorm, SwiGLU, Attention, Block = hf.components(FAMILY, __name__)
CONVENTIONS = hf.conventions(
    FAMILY,
    SOURCE,
    rmsnorm={**LLAMA_RMSNORM, "weight_mapping": "identity (Phi3RMSNorm.weight)", "source": f"{SOURCE}.Phi3RMSNorm"},
    swiglu={"formula": "y = down_proj(up ⊙ silu(gate)), (gate, up) = gate_up_proj(x).chunk(2)"},
)
