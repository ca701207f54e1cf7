"""Pitfall: RMSNorm dispatches on the weight's dtype and reads x's memory as if it held that dtype.

The mistake: the kernel is instantiated for ``weight.dtype`` (``DISPATCH_FLOAT_TYPES(weight.scalar_type(), …)``)
and reads x through a pointer of that type. With weights and activations in one dtype that is right; with fp32
master weights and bf16 activations — how mixed-precision training runs every norm — it reads pairs of bf16 values
as one fp32 value, and rows past the end of x's bytes (here: zeros), and normalises garbage.

Why people make it: the kernel is tested with module and input in one dtype (``module.to(dtype)``); the mixed case
only appears inside a training framework that keeps fp32 master weights.

Evidence: test-only (kernels dispatching on one tensor's dtype for two tensors are a known class; no public report of
this norm is cited here).

Caught by: RMSNorm.rmsnorm_accepts_parameters_in_another_dtype — fp32 weights, bf16 x: y must match golden.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core.modules import rms_norm

__all__ = ["RMSNorm", "read_as"]


def read_as(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x's bytes read as ``dtype`` elements, x.numel() of them, in x's shape (bytes past x's end read as zeros)."""
    raw = x.detach().contiguous().reshape(-1).view(torch.uint8)
    need = x.numel() * torch.empty(0, dtype=dtype).element_size()
    padded = torch.cat([raw, torch.zeros(max(0, need - raw.numel()), dtype=torch.uint8, device=x.device)])
    return padded[:need].view(dtype).reshape(x.shape)


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG for mixed dtypes: x read through a pointer of the weight's dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seen = read_as(x, self.weight.dtype) if x.dtype != self.weight.dtype else x  # the bug
        return rms_norm(seen, self.weight, self.eps).to(x.dtype)
