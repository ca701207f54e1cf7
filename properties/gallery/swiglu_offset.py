"""Pitfall: a stray constant in the hidden activation — SwiGLU(0) ≠ 0.

The mistake: y = W_down (silu(W_gate x) ⊙ W_up x + c) with c = 10⁻³: a bias folded into the hidden
activation (by a converter that merged the biases of another model variant, or a leftover "+ eps" meant to
avoid a zero). The output moves by W_down·c everywhere — small enough to look like rounding noise.

Why people make it: constants creep in when weights are converted between variants with and without
biases, or when a numerical guard is added in the wrong place; with random inputs the shift is invisible.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: SwiGLU.swiglu_maps_zero_to_zero — SwiGLU(0) = 0 exactly for any weights (no bias, no offset).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: y = W_down (silu(W_gate x) ⊙ W_up x + 10⁻³)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x) + 1e-3)  # the bug: a constant offset
