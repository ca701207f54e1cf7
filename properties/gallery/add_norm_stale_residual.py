"""Pitfall: the stale residual — a functional wrapper around an in-place kernel hands back the stream as it was.

The mistake: serving kernels update their arguments in place (vLLM's ``fused_add_rms_norm(input, residual,
weight, eps)`` writes y into ``input`` and x + r into ``residual``). A wrapper that must not modify the caller's
tensors copies them, runs the kernel on the copies — and returns the copy of the residual taken *before* the
kernel ran instead of the one the kernel updated. y is right; h is the old stream r, so the branch x is lost from
the stream from then on.

Why people make it: with in-place kernels "the residual" names two tensors, before and after, and a refactor that
adds the defensive copies keeps returning the old name.

Evidence: none known as a public bug report; the in-place signature that invites it is vLLM's own (its IR now
distinguishes in-place and functional overloads). Kept as a test-only mutation.

Caught by: AddRMSNorm.add_rmsnorm_sum_is_rounded_once — h must be x + r rounded once, bitwise.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm", "fused_add_rms_norm_"]


def fused_add_rms_norm_(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    """vLLM's in-place contract: residual ← x + residual, x ← RMSNorm(residual) (correct)."""
    residual.add_(x)
    x.copy_(rms_norm(residual, weight, eps))


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG: copies, runs the in-place kernel on the copies, returns (updated x, the residual before the kernel)."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        y, stream, before = x.clone(), residual.clone(), residual.clone()
        fused_add_rms_norm_(y, stream, self.weight, self.eps)
        return y, before  # the bug: `stream` holds x + r; `before` is the stale copy
