"""nanolm_core — the minimal reference: config, RMSNorm, AddRMSNorm, SwiGLU, GQA attention with RoPE, pre-norm Block."""

from nanolm_core.attention import Attention
from nanolm_core.config import CONFIGS, ModelConfig, default_ffn_dim
from nanolm_core.model import Block, PostNormBlock, Transformer
from nanolm_core.modules import AddRMSNorm, LayerNorm, ReLUFFN, RMSNorm, SwiGLU

__all__ = [
    "CONFIGS",
    "AddRMSNorm",
    "Attention",
    "Block",
    "LayerNorm",
    "ModelConfig",
    "PostNormBlock",
    "RMSNorm",
    "ReLUFFN",
    "SwiGLU",
    "Transformer",
    "default_ffn_dim",
]
