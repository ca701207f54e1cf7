"""Pitfall: AddRMSNorm dispatches on the weight's dtype and reads x and the residual as if they held that dtype.

The mistake: the fused add-norm kernel is instantiated for ``weight.dtype`` and reads both inputs through pointers
of that type. With fp32 master weights and bf16 activations (mixed-precision training) it adds and normalises
garbage: pairs of bf16 values read as one fp32 value, and bytes past the end of the inputs (here: zeros).

Why people make it: the kernel is tested with module and inputs in one dtype; only a training framework with fp32
master weights calls it mixed.

Evidence: test-only (the dispatch-on-one-tensor class; no public report of this kernel is cited here).

Caught by: AddRMSNorm.add_rmsnorm_accepts_parameters_in_another_dtype — fp32 weight, bf16 x and residual: y and h
must match golden.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core.modules import rms_norm
from properties.gallery.rmsnorm_reads_x_in_weight_dtype import read_as

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG for mixed dtypes: x and the residual read through pointers of the weight's dtype."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dtype == self.weight.dtype:
            return super().forward(x, residual)
        h = read_as(x, self.weight.dtype) + read_as(residual, self.weight.dtype)  # the bug
        return rms_norm(h, self.weight, self.eps).to(x.dtype), h.to(x.dtype)
