"""Pitfall: the bf16 hidden activation stored with 4 mantissa bits — 3 of bf16's 7 are dropped.

The mistake: in bf16 the hidden activation h = silu(W_gate x) ⊙ W_up x is written to a narrower buffer
(truncated to 4 explicit mantissa bits, as an fp8-like cache or a packing bug would); fp32 is untouched.
The error is 8× bf16's own rounding — large, yet only in the low-precision path.

Why people make it: low-precision buffers for activations are a standard memory optimisation, and a
test that runs in fp32 (or compares bf16 with a loose atol) passes.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: SwiGLU.swiglu_bf16_drift_from_fp32_is_bounded — on the same bf16 inputs and weights,
|f_bf16 − f_fp32| ≤ b_bf16 + b_fp32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG in bf16: y = W_down (trunc₄(silu(W_gate x) ⊙ W_up x)), 4 mantissa bits kept."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.w_gate(x)) * self.w_up(x)
        if x.dtype == torch.bfloat16:
            h = (h.view(torch.int16) & ~0x7).view(torch.bfloat16)  # the bug: drop 3 of the 7 mantissa bits
        return self.w_down(h)
