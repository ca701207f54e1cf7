"""Pitfall: the sum of squares of the residual sum accumulated in 16 bits.

The mistake: the fused kernel adds x + r (correctly, rounded once) and accumulates Σh² in the storage dtype —
every square and partial sum rounded to bf16/fp16 — before the (correct, fp32) normalisation. Once Σh² ≈ 256
a bf16 step is 2, so adding h_i² ≈ 1 changes nothing: the error grows with D, to tens of percent at model widths.

Why people make it: on a CPU test torch's own bf16 ``sum`` accumulates in fp32, so the same code looks right; a
GPU kernel (or a hand-written loop, as here) that accumulates in the storage dtype does not.

Evidence: sgl-project/sglang#27540, pytorch/pytorch#133085, nntrainer/nntrainer#3935, amd/IRON#139 (the norm's
own form: the bf16_accumulation entry).

Caught by: AddRMSNorm.add_rmsnorm_matches_stored_golden — the stored case at D = 8192 against golden.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same, upcast_dtype
from properties.gallery.bf16_accumulation import sum_of_squares_in_dtype

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG: h = x + r correct; y = h · rsqrt(s/D + eps) ⊙ w with s = Σh² accumulated in h.dtype."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        h = x + residual
        c = upcast_dtype(x.dtype)
        r = torch.rsqrt(sum_of_squares_in_dtype(h).to(c) / self.dim + self.eps)  # the bug: s in the storage dtype
        return (h.to(c) * r * self.weight.to(c)).to(x.dtype), h
