"""Pitfall: the residual returned in fp32 — a bf16 add + norm whose updated stream comes back in fp32.

The mistake: h = fp32(x) + fp32(r) is kept in fp32 for accuracy and returned without the cast back to the input
dtype; y is cast back and correct. The next layer now receives an fp32 stream (and every later add promotes).

Why people make it: "residual in fp32" is a real option of fused add + norm kernels (Mamba's
``residual_in_fp32``, SGLang's ``fp32_residual``): inside one model it is a design, behind this contract (h in the
input dtype) it is a leak. Values are *more* accurate, so numeric tests pass.

Evidence: none known as a bug report for the add + norm; the same drift in a norm is
huggingface/transformers#30236 (the dtype_drift entry). Kept as a test-only mutation.

Caught by: AddRMSNorm.add_rmsnorm_preserves_shape_dtype_device in bf16/fp16.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same, upcast_dtype
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG: h = x + r in fp32 (fp64 for fp64), returned without a cast; y = RMSNorm(h) in the input dtype."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        c = upcast_dtype(x.dtype)
        h = x.to(c) + residual.to(c)  # the bug: never cast back to x.dtype
        return rms_norm(h, self.weight, self.eps).to(x.dtype), h
