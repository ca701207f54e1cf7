"""Pitfall: output dtype drift — bf16 in, fp32 out.

The mistake: the norm is computed in fp32 (correctly) but the result is never cast back:
y = x_fp32 · rsqrt(ms + eps) · w_fp32 is returned as fp32. The values are even *more* accurate;
the contract (same dtype out as in) is broken, and every following layer now runs in fp32
(2× memory, a silent slow-down, or a dtype-mismatch error far from the cause).

Why people make it: the upcast is explicit and visible, the downcast is easy to forget; and
mixed-precision weights (fp32 γ with bf16 x) promote by type-promotion rules without anyone
writing a cast.

Evidence: huggingface/transformers#30236 (LlamaRMSNorm with bf16 x and fp32 weight returns fp32).

Caught by: RMSNorm.rmsnorm_preserves_shape_dtype_device in bf16/fp16.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x·rsqrt(mean(x²) + eps)·w returned in the compute dtype (fp32 for bf16/fp16 input)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.to(upcast_dtype(x.dtype)))  # the bug: upcast on the way in, never cast back
