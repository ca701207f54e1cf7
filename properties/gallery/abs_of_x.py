"""Pitfall: normalising |x| — every output is non-negative (for γ > 0), the sign is lost.

The mistake: y = |x| / sqrt(mean(x²) + eps) ⊙ w: an ``abs()`` meant for the statistic (mean |x|, or a
magnitude clamp) ends up on the value that is scaled. Magnitudes are exactly right, only signs are wrong.

Why people make it: a refactor that moves a "magnitude" computation (abs-max scaling for quantisation,
a log-domain trick) next to the normalisation; plots of |y| or of the row norms look perfect.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: RMSNorm.rmsnorm_preserves_sign — sign(y) = sign(x)·sign(γ) wherever y ≠ 0, exactly.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = |x| / sqrt(mean(x²) + eps) ⊙ w (the reference applied to |x|)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.abs())  # the bug: the sign of x is dropped
