"""Pitfall: a hand-written backward whose weight gradient forgets the normaliser: dγ = Σ g ⊙ x.

The mistake: a custom ``torch.autograd.Function`` with the correct forward y = x·r·w and the correct
input gradient dx = r·(g ⊙ w) − x·r³·mean(g ⊙ w ⊙ x), but dγ = Σ_rows g ⊙ x instead of Σ_rows g ⊙ x · r.
The gain's gradient is off by the factor 1/r = rms(x) per row: the forward and dx are exact, the
optimiser moves γ by the wrong amount.

Why people make it: in a fused kernel dγ is a separate reduction over rows, written after dx, where the
saved r is easy to leave out; tests that check only the input gradient (or only the loss curve) pass.

Evidence: none known for this exact term; hand-written norm backwards go wrong in related ways
(linkedin/Liger-Kernel#370, unslothai/unsloth#4550). Kept as a test-only mutation.

Caught by: RMSNorm.rmsnorm_gradients_pass_gradcheck — in fp64 the analytical Jacobian (x and γ) must agree
with finite differences.
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features
from properties.gallery.rmsnorm_wrong_backward import RMSNormFunction

__all__ = ["RMSNorm"]


class _WeightGradWithoutR(RMSNormFunction):
    """Forward y = x·r·w (compute in fp32, round once); correct dx; WRONG dγ = Σ g·x."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x, weight, r = ctx.saved_tensors
        c = r.dtype
        gw, xc = g.to(c) * weight.to(c), x.to(c)
        dx = r * gw - xc * r.pow(3) * (gw * xc).mean(dim=-1, keepdim=True)
        dw = (g.to(c) * xc).reshape(-1, xc.shape[-1]).sum(dim=0)  # the bug: "· r" is missing
        return dx.to(x.dtype), dw.to(weight.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Correct forward y = x / sqrt(mean(x²) + eps) ⊙ w and dx; WRONG hand-written dγ."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return _WeightGradWithoutR.apply(x, self.weight, self.eps)
