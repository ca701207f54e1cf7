"""Pitfall: a hand-written backward that drops the stream's own gradient from d(residual).

The mistake: a fused ``torch.autograd.Function`` with the correct forward (y, h) = (RMSNorm(x + r), x + r) and a
backward that returns dx = dx_RMSNorm(h; g_y) + g_h for the branch but only dx_RMSNorm(h; g_y) for the residual:
the cotangent g_h of the returned stream never reaches the earlier layers through the residual input.

Why people make it: x and r receive *one* gradient mathematically, but a fused backward writes two buffers, and
the incoming gradient of the second output is optional in fused kernels (Liger's ``has_dS_out``): forgetting it
in one of the two places passes every forward test and every test that only differentiates y.

Evidence: none known as a public bug report; fused norm backward kernels with wrong buffers are
linkedin/Liger-Kernel#370 and unslothai/unsloth#4550. Kept as a test-only mutation.

Caught by: AddRMSNorm.add_rmsnorm_gradients_match_golden — d(residual) against golden.add_rmsnorm_vjp.
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same, upcast_dtype
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm", "AddRMSNormFunction"]


class AddRMSNormFunction(torch.autograd.Function):
    """Forward (RMSNorm(x + r), x + r); WRONG backward: d(residual) lacks g_h."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float):
        h = x + residual
        ctx.save_for_backward(h, weight)
        ctx.eps = eps
        return rms_norm(h, weight, eps), h

    @staticmethod
    def backward(ctx: Any, g_y: torch.Tensor, g_h: torch.Tensor) -> tuple[Any, ...]:
        h, weight = ctx.saved_tensors
        c = upcast_dtype(h.dtype)
        hc, w, g = h.to(c), weight.to(c), g_y.to(c)
        r = torch.rsqrt(hc.pow(2).mean(dim=-1, keepdim=True) + ctx.eps)
        d_norm = r * w * g - hc * r**3 * (g * w * hc).mean(dim=-1, keepdim=True)
        dw = (g * hc * r).reshape(-1, hc.shape[-1]).sum(dim=0)
        dx = (d_norm + g_h.to(c)).to(h.dtype)
        return dx, d_norm.to(h.dtype), dw.to(weight.dtype), None  # the bug: + g_h missing for the residual


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """Correct forward; WRONG hand-written backward for the residual input."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        return AddRMSNormFunction.apply(x, residual, self.weight, self.eps)
