"""Pitfall: the normalised value put back on the stream — h = RMSNorm(x + r) instead of x + r.

The mistake: the fused module returns the normalised sum twice, as the next layer's input *and* as the updated
residual stream: ``h = norm(x + r); return h, h``. The identity path of the pre-norm block disappears: every
layer resets the stream's scale, and the next branch is added to a normalised copy.

Why people make it: the course's mistake in fused form — "x = self.norm(x)" on its own line reads as "normalise
first", and once the add and the norm share one function the two outputs are easy to mix up; with unit-RMS
streams at initialisation the loss still goes down.

Evidence: the unfused form is Howuhh/faster-trajectory-transformer#3 and SHI-Labs/Compact-Transformers#25 (the
Block catalogue's normalized_residual); here it is visible on one module, without a whole block.

Caught by: AddRMSNorm.add_rmsnorm_matches_golden — h must be x + r correctly rounded (bitwise against golden).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG: returns (RMSNorm(x + r), RMSNorm(x + r)) — the stream carries the normalised value."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        h = rms_norm(x + residual, self.weight, self.eps)  # the bug: the stream is overwritten by its norm
        return h, h
