"""Pitfall: a hand-written SiLU backward that uses σ(z) as the derivative.

The mistake: a custom ``torch.autograd.Function`` for silu(z) = z·σ(z) whose backward returns
g ⊙ σ(z). The product rule gives silu'(z) = σ(z) + z·σ(z)·(1 − σ(z)) = σ(z)·(1 + z·(1 − σ(z))):
the second term is missing (it is 0 only at z = 0, and largest, ≈ 0.1, near |z| ≈ 2.4).

Why people make it: fused SwiGLU kernels (forward and backward in one pass) need the derivative
written by hand; "the derivative of x·σ(x) is σ(x)" is the ReLU intuition (d relu = step) carried
over. Training still converges, just to a different place — and forward tests all pass.

Evidence: hand-written backward passes in fused kernels (linkedin/Liger-Kernel#370,
unslothai/unsloth#4550).

Caught by: SwiGLU.swiglu_gradients_match_golden — the vector-Jacobian product against golden.
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features

__all__ = ["SwiGLU"]


class _SiLUFunction(torch.autograd.Function):
    """Forward silu(z) = z·σ(z) (correct); WRONG backward: dz = g·σ(z)."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(z)
        return torch.nn.functional.silu(z)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        (z,) = ctx.saved_tensors
        return g * torch.sigmoid(z)  # the bug: missing "· (1 + z·(1 − σ(z)))"


class SwiGLU(nanolm_core.SwiGLU):
    """Correct forward y = W_down (silu(W_gate x) ⊙ W_up x); WRONG hand-written silu backward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        return self.w_down(_SiLUFunction.apply(self.w_gate(x)) * self.w_up(x))
