"""An HF decoder layer (Llama, Qwen2, Mistral, Granite) mapped onto the contract's Block by a user: ``LlamaRMSNorm``
(fp32 statistic and product, rounded to the layer's dtype, times the weight) and ``LlamaRotaryEmbedding`` (inv_freq
and cos/sin computed in fp32, autocast off, then ``.to(x.dtype)``); projections, attention and residuals in the
layer's dtype. In an fp64 layer the norms and the RoPE tables run in fp32."""

import torch

import nanolm_core
from nanolm_core.attention import rope_cos_sin
from tests.wrappers.hf_norms import LlamaRMSNorm


class _Attention(nanolm_core.Attention):
    def rope_tables(self, T, dtype, device):
        cos, sin = rope_cos_sin(T, self.config.head_dim, self.config.rope_theta, torch.float32, device)
        return cos.to(dtype), sin.to(dtype)


class Block(nanolm_core.Block):
    norm_cls = LlamaRMSNorm
    attn_cls = _Attention
