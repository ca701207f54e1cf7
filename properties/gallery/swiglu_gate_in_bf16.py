"""Pitfall: a precision downgrade in SwiGLU — the gate silu(W_gate x) evaluated in bf16 inside an fp32 FFN.

The mistake: the three projections run in fp32, but the activation kernel casts the gate to bf16, applies SiLU
there and converts back: each hidden unit's gate errs by ~2⁻⁸ relatively and the FFN output by ~2⁻⁹ of its scale,
hundreds to thousands of fp32 ULPs.

Why people make it: an activation kernel (or a fused "silu and mul") written for the low-precision path and reused
for fp32; an autocast list that runs pointwise ops in bf16.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: SwiGLU.swiglu_matches_golden in fp32 (the probabilistic tier: the W_down dot products of a correct
fp32 implementation cannot err by that much); at F = 28672 in fp32 the bound must admit a sequential fp32 W_down
whose own error is of the same order, so the stored F = 28672 case alone would not see it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: silu(W_gate x) computed in bf16."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = self.w_gate(x)
        gate = F.silu(g.to(torch.bfloat16)).to(g.dtype)  # the bug: the activation in bf16
        return self.w_down(gate * self.w_up(x))
