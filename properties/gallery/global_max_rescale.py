"""Pitfall: "overflow-safe" pre-scaling by the tensor-wide max — one bad token ruins the batch.

The mistake: to keep x² from overflowing in fp16, the kernel first divides by a scale shared by
the whole tensor, s = max|x| over *all* rows: y = (x/s) · rsqrt(mean((x/s)²) + eps) ⊙ w. It is
mathematically the same function (up to eps), but one row containing ±inf or NaN makes s = inf or
NaN and every other row becomes 0 or NaN — and a zero tensor divides 0 by 0.

Why people make it: rescaling by the max is the textbook cure for overflow (it is how
``torch.linalg.vector_norm`` stays safe), but the scale must be per row; reducing over the whole
tensor is one missing ``dim=-1, keepdim=True``.

Evidence: fp16 overflow work-arounds for pytorch/pytorch#133085 and microsoft/onnxruntime#29043;
non-finite values spreading across a batch (deepspeedai/DeepSpeed#581).

Caught by: RMSNorm.rmsnorm_confines_nonfinite_to_row — a non-finite element may only affect its
own row.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = (x/s)·rsqrt(mean((x/s)²) + eps)·w with s = max|x| over the whole tensor, not per row."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        xs = xc / xc.abs().amax()  # the bug: one scale for every row (amax() without dim=-1)
        r = torch.rsqrt(xs.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xs * r * self.weight.to(xc.dtype)).to(x.dtype)
