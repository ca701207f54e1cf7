"""Pitfall: AddRMSNorm's backward returns no gradient when y's cotangent is None (only h was used).

The mistake: the fused add-norm's autograd Function sets ``ctx.set_materialize_grads(False)`` (no zero tensors for
unused outputs: a real saving) and starts its backward with ``if dy is None: return None, None, None`` — as if the
norm were the only way x and the residual reach the loss. When the caller uses the updated stream h alone (the
last layer's residual feeding a head that skips the norm, a probe reading the stream), x and the residual get no
gradient at all instead of dh.

Why people make it: the fused op is always tested with both outputs used; the early return for a missing
cotangent is written for y only.

Evidence: test-only (no public report of this kernel is cited here).

Caught by: AddRMSNorm.add_rmsnorm_differentiates_any_subset_of_outputs — differentiating h alone.
"""

from __future__ import annotations

import torch

import nanolm_core
from properties.gallery.add_norm_rstd_saved_detached import AddRMSNormFunction

__all__ = ["AddRMSNorm", "SkippingFunction"]


class SkippingFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, eps: float):
        ctx.set_materialize_grads(False)
        return AddRMSNormFunction.forward(ctx, x, r, w, eps)  # saves h, w and 1/rms on ctx

    @staticmethod
    def backward(ctx, dy, dh):
        if dy is None:  # the bug: h's own gradient is forgotten
            return None, None, None, None
        dh = torch.zeros_like(dy) if dh is None else dh
        return AddRMSNormFunction.backward(ctx, dy, dh)


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG when only h is differentiated: x and the residual get no gradient."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = SkippingFunction.apply(x, residual, self.weight, self.eps)
        return y, h
