"""Correct, built on torch primitives: the ``torch`` adapter (F.rms_norm, F.linear + F.silu, SDPA attention with
GQA via enable_gqa), except that RoPE runs in the input dtype with cos/sin rounded to it first."""

import torch

from nanolm_core.attention import apply_rope
from properties.adapters import torch_ref
from properties.adapters.torch_ref import RMSNorm, SwiGLU

__all__ = ["Block", "RMSNorm", "SwiGLU"]


class Attention(torch_ref.Attention):
    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        return apply_rope(x, cos.to(x.dtype), sin.to(x.dtype))


class Block(torch_ref.Block):
    attn_cls = Attention
