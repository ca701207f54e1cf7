"""Pitfall: SiLU written so that it cancels — z·(1 − σ(−z)) loses every digit for negative z in bf16.

The mistake: silu(z) = z · (1 − σ(−z)), evaluated in the module dtype. For z = −6, σ(6) = 0.99753
rounds in bf16 to 0.99609 (spacing 2⁻⁸ below 1), and 1 − 0.99609 = 0.0039 instead of σ(−6) = 0.00247:
58% error; for z < −6.24 σ(−z) rounds to 1 and silu(z) = 0 exactly, however large the true value.
Subtracting two nearly equal numbers ("catastrophic cancellation") turns the rounding error of
σ into the whole result.

Why people make it: the identity σ(z) = 1 − σ(−z) is exact in real numbers and is used to reuse
one "stable" branch of the sigmoid; in fp32 the damage is invisible (1e-7), in bf16 it is not.

Evidence: skyzh/tiny-llm#164.

Caught by: SwiGLU.swiglu_is_elementwise_silu_gate and SwiGLU.swiglu_matches_golden in bf16 (gates
spread over |z| of several units).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features

__all__ = ["SwiGLU", "silu_by_complement"]


def silu_by_complement(z: torch.Tensor) -> torch.Tensor:
    """WRONG in low precision: silu(z) = z · (1 − σ(−z)), every step rounded to z.dtype."""
    return z * (1 - torch.sigmoid(-z))  # cancellation: 1 − (a number close to 1)


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG in bf16/fp16: y = W_down (silu_by_complement(W_gate x) ⊙ W_up x)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        return self.w_down(silu_by_complement(self.w_gate(x)) * self.w_up(x))
