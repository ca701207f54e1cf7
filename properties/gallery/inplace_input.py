"""Pitfall: normalising in place — the caller's activation is overwritten (but only in fp32).

The mistake: xc = x.to(fp32); xc.mul_(r).mul_(w). ``Tensor.to`` returns the *same* tensor when
the dtype already matches, so for fp32 input the in-place multiplies clobber the caller's x; for
bf16/fp16 input ``.to`` made a copy and everything looks fine.

Why people make it: in-place ops save a full activation of memory, and a test in bf16 (or one
that never looks at x again) passes. In a real block x is the residual stream: the skip path then
adds the normalised x instead of the raw one. Autograd refuses when x requires grad, but
inference runs under ``no_grad``, where nothing complains.

Evidence: the aliasing contract of every framework op; in-place buffer reuse bugs in fused norm
kernels (linkedin/Liger-Kernel#370, unslothai/unsloth#4550).

Caught by: RMSNorm.rmsnorm_does_not_modify_input — x is bitwise unchanged after the call. Shown in fp32.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x·rsqrt(mean(x²) + eps)·w computed in place in x's buffer when x is already fp32/fp64."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))  # no copy when x is already in the compute dtype
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return xc.mul_(r).mul_(self.weight.to(xc.dtype)).to(x.dtype)  # the bug: in place, "to save memory"
