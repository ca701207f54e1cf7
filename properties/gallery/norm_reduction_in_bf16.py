"""Pitfall: a precision downgrade in the norm — the sum of squares reduced in bf16 inside an fp32 RMSNorm.

The mistake: the kernel declares fp32 compute and keeps x, γ and the output in fp32, but its row reduction
Σx² runs in bf16: the squares and their sum are rounded to bf16 (8 significant bits) before rsqrt. Everything
else is the reference. The mean square then errs by up to 2⁻⁸ relatively, r = (ms + eps)^-½ by half that,
and every output by ~2⁻⁹ — thousands of fp32 ULPs, far beyond what any order of an fp32 sum can err at model
widths (D = 2048 … 16384).

Why people make it: a reduction kernel templated on one "compute" type, instantiated with the activation type;
or an autocast region around the norm that casts x² to the low dtype before ``mean``. It looks right in bf16
tests (where the output is rounded to bf16 anyway) and only shows in fp32, at the width where it matters.

Evidence: sgl-project/sglang#27540, pytorch/pytorch#133085 (sums of squares in the low dtype).

Caught by: RMSNorm.rmsnorm_matches_stored_golden in fp32 (rows of D = 2048 … 16384, every row outside the
bound); rmsnorm_matches_golden sees it too.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG: y = x · rsqrt(mean_bf16(x²) + eps) ⊙ w — the mean of squares formed and rounded in bf16."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        c = upcast_dtype(x.dtype)
        ms = x.to(torch.bfloat16).pow(2).mean(dim=-1, keepdim=True)  # the bug: the reduction's type is bf16
        r = torch.rsqrt(ms.to(c) + self.eps)
        return (x.to(c) * r * self.weight.to(c)).to(x.dtype)
