"""Pitfall: the fused add-norm's mean of squares accumulated in fp32 but kept in the input's half precision.

The mistake: h = x + r is right and Σh² is summed in fp32 (no overflow there), but the variance is written to a
buffer of the input dtype before the rsqrt: in fp16, mean(h²) > 65504 — a residual stream of RMS above 256,
ordinary for the massive activations of real models — rounds to +inf and y comes out as zeros (h itself is
right). The answer is finite and of order |γ| for every fp16 row: the contract's compute dtype (fp32) reaches the
overflow threshold only at |h| ≈ 1.8·10¹⁹/√D, far beyond fp16. (Below the overflow, the variance's own fp16
rounding costs y a few ULPs: the value laws see that in fp16 too.)

Why people make it: the rstd buffer a fused add-norm saves for its backward is allocated like the input
(``torch.empty_like(x[..., :1])``); small test activations keep mean(h²) tiny.

Evidence: microsoft/onnxruntime#29043 (an fp16 simplified-layer-norm kernel — the skip-add form included —
whose variance reduction overflowed half precision: inputs above ~7600 gave zeros); RMSNorm's own form:
rmsnorm_half_variance.

Caught by: AddRMSNorm.add_rmsnorm_is_exact_up_to_the_overflow_threshold — in fp16 its rows (the stream, the
branch zero) reach |h| = 65504, every one inside the domain.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same, upcast_dtype

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG for fp16 rows with mean(h²) > 65504: the variance is rounded to the input dtype and overflows."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        h = x + residual
        hc = h.to(upcast_dtype(x.dtype))
        variance = hc.pow(2).mean(dim=-1, keepdim=True).to(x.dtype)  # the bug: a half-precision variance buffer
        return (hc * torch.rsqrt(variance.to(hc.dtype) + self.eps) * self.weight.to(hc.dtype)).to(x.dtype), h
