"""Pitfall: the norm reads one operand of the sum — y = RMSNorm(x) while h = x + r.

The mistake: the fused kernel returns the right stream h = x + r but normalises the branch x it loaded first,
not the sum: y = x / √(mean(x²) + eps) ⊙ w. The next sublayer sees a normalised branch output with no residual
information in it.

Why people make it: inside one kernel x, r and h are three names for three registers; normalising "the input"
is the old, unfused code path.

Evidence: huggingface/transformers#11046 (BlenderbotSmallDecoder normalised the embeddings before adding the
positions instead of normalising the sum).

Caught by: AddRMSNorm.add_rmsnorm_normalizes_the_sum_it_returns — y against the golden RMSNorm of the returned h.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG: (RMSNorm(x), x + r) — the norm of the branch, not of the sum."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        return rms_norm(x, self.weight, self.eps), x + residual  # the bug: rms_norm(x), not rms_norm(x + residual)
