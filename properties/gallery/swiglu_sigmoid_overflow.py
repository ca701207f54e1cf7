"""Pitfall: SwiGLU computes σ(z) as exp(z) / (1 + exp(z)), which is NaN once the gate's pre-activation passes 88.7.

The mistake: silu(z) = z·exp(z)/(1 + exp(z)) is σ written the "obvious" way; exp(z) overflows fp32 (and bf16) at
z ≈ 88.7 and the ratio is inf/inf = NaN. With unit-scale activations z never comes near; with the massive
activations trained LLMs carry in a few channels (hundreds to thousands), W_gate·x reaches the hundreds and the
FFN output is NaN for every token.

Why people make it: both forms are the same function on paper, and tests draw activations of order one.

Evidence: test-only (the overflow of exp(z)/(1+exp(z)) is the textbook reason torch's sigmoid is written otherwise;
no public report of this FFN is cited here).

Caught by: SwiGLU.swiglu_matches_golden_at_real_magnitudes — inputs with massive channels.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG (NaN) for gate pre-activations past ≈ 88.7."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.w_gate(x)
        e = torch.exp(z)
        return self.w_down(z * e / (1 + e) * self.w_up(x))  # the bug: inf / inf = NaN
