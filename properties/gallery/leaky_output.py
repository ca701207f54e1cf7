"""Pitfall: a leaky clamp after W_down — the FFN output is no longer linear in W_down.

The mistake: y = φ(W_down h) with φ(y) = y for y > 0, y/2 otherwise: an activation applied to the FFN's
output (a leftover of another block design, or the activation of the next layer moved up by one).

Why people make it: activations are one line each and easy to misplace when a block is refactored; with
small random weights the output still looks like a plausible FFN output.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: SwiGLU.swiglu_is_linear_in_w_down — f(W₁ + W₂) = f(W₁) + f(W₂) in W_down, within the derived
bound.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: y = leaky(W_down (silu(W_gate x) ⊙ W_up x)), leaky(y) = y if y > 0 else y/2."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return torch.where(y > 0, y, 0.5 * y)  # the bug: an activation on the output
