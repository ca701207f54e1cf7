"""Pitfall: AddRMSNorm takes its serving kernel under inference_mode, which adds x into the caller's residual.

The mistake: serving stacks fuse the residual add and the norm and update the residual stream in place (the caller
owns it and drops the old value); the module switches to that kernel whenever ``torch.is_inference_mode_enabled()``
— and the caller's residual tensor is then x + r. A framework that evaluates the same inputs under inference_mode
and then again (a training step, an evaluation with no_grad) computes the second time from a corrupted stream.

Why people make it: in-place is the contract of the serving kernel; the module reuses it where the caller did not
ask for it, keyed on a global mode rather than an explicit argument.

Evidence: test-only (vLLM's fused_add_rms_norm updates the residual in place by design; no public report of a
module taking it under inference_mode).

Caught by: AddRMSNorm.add_rmsnorm_holds_in_every_call_context — the calls after the inference_mode call must match
golden for the caller's inputs.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG under inference_mode: residual += x in place (the caller's tensor), then normalised."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not torch.is_inference_mode_enabled():
            return super().forward(x, residual)
        residual.add_(x)  # the bug: the caller's residual is the stream now
        return rms_norm(residual, self.weight, self.eps), residual.clone()
