"""Pitfall: RMSNorm's autocast path casts its input to fp16, whatever dtype autocast runs in.

The mistake: the norm is wrapped as ``custom_fwd(cast_inputs=torch.float16)``: under autocast the input is cast
to fp16 before the (otherwise correct) fp32 computation. Under bf16 autocast — the mixed precision CPUs and recent
GPUs train in — activations beyond 65504 become inf (the row turns NaN) and those below 2⁻²⁴ become 0.

Why people make it: the decorator was written when mixed precision meant fp16; bf16 autocast came later and calls
the same path.

Evidence: test-only (hard-coded ``cast_inputs=torch.float16`` is common in older fused kernels; no public report of
this norm).

Caught by: RMSNorm.rmsnorm_holds_in_every_call_context — under CPU autocast bf16, y must match golden within the
bf16 bound.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core.modules import rms_norm

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG under autocast: x cast to fp16 first (overflow to inf, underflow to 0)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_autocast_enabled(x.device.type):
            x = x.to(torch.float16)  # the bug: the cast of custom_fwd(cast_inputs=torch.float16)
        return rms_norm(x, self.weight, self.eps)
