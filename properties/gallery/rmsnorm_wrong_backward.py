"""Pitfall: a hand-written backward that treats the RMS as a constant.

The mistake: a custom ``torch.autograd.Function`` with the correct forward y = x·r·w,
r = (mean(x²) + eps)^(−1/2), and the backward dx = g ⊙ w · r. The true gradient has a second
term because r depends on x:
    dx = r·(g ⊙ w) − x · r³ · mean(g ⊙ w ⊙ x),      dw = Σ_rows g ⊙ x · r.
The missing term is the projection that removes the radial component of the gradient.

Why people make it: fused kernels need a hand-written backward; "the normaliser is just a scale"
is a natural simplification, and the forward tests — the only ones most people write — pass.

Evidence: fused norm kernels with wrong or clobbered backward buffers (linkedin/Liger-Kernel#370,
unslothai/unsloth#4550, vllm-project/vllm#52151).

Caught by: RMSNorm.rmsnorm_gradients_match_golden — the vector-Jacobian product against golden.
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm", "RMSNormFunction"]


class RMSNormFunction(torch.autograd.Function):
    """Forward y = x·r·w (compute in fp32, round once); WRONG backward: dx = g·w·r (no projection term)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        xc, w = x.to(upcast_dtype(x.dtype)), weight.to(upcast_dtype(x.dtype))
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, r)
        return (xc * r * w).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x, weight, r = ctx.saved_tensors
        c = r.dtype
        gc, xc = g.to(c), x.to(c)
        dx = gc * weight.to(c) * r  # the bug: − x·r³·mean(g·w·x) is missing
        dw = (gc * xc * r).reshape(-1, xc.shape[-1]).sum(dim=0)
        return dx.to(x.dtype), dw.to(weight.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Correct forward y = x / sqrt(mean(x²) + eps) ⊙ w; WRONG hand-written backward for x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return RMSNormFunction.apply(x, self.weight, self.eps)
