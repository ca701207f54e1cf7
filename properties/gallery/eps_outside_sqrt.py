"""Pitfall: eps outside the square root — x / (rms + eps) instead of x / sqrt(ms + eps).

The mistake: y = x / (sqrt(mean(x²)) + eps) ⊙ w. Mathematically a different function: eps now
competes with the RMS itself (1e-3) instead of with the mean square (1e-6).

Why people make it: it is how one avoids a division by zero in a norm ("add a small number to the
denominator"), and at unit scale the two agree to 5e-7 relative — far below any test tolerance.
At rms = 1e-3 with eps = 1e-6 they differ by 41% (sqrt(1e-6 + 1e-6) vs 1e-3 + 1e-6).

Evidence: allenai/OLMo#281, NVIDIA/TransformerEngine#364.

Caught by: RMSNorm.rmsnorm_matches_golden — the golden comparison sweeps the input scale down to
rows whose mean square is comparable to eps. Lesson: test across magnitudes, not just at 1.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x / (sqrt(mean(x²)) + eps) ⊙ w, computed in fp32, rounded once."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        rms = xc.pow(2).mean(dim=-1, keepdim=True).sqrt()
        return (xc / (rms + self.eps) * self.weight.to(xc.dtype)).to(x.dtype)  # the bug: eps outside
