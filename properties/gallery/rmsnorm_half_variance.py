"""Pitfall: the mean of squares is accumulated in fp32 but kept in the input's half precision.

The mistake: x² is summed in fp32 (no overflow there), but the variance is written to a buffer of the input
dtype before the rsqrt: in fp16, mean(x²) > 65504 — an RMS above 256, ordinary for residual-stream outliers —
rounds to +inf and the row comes out as zeros. The answer is finite and of order |γ| for every fp16 row: the
contract's compute dtype (fp32) reaches the overflow threshold only at |x| ≈ 1.8·10¹⁹/√D, far beyond fp16.

Why people make it: the variance (or rstd) buffer is allocated like the input (``torch.empty_like(x[..., :1])``)
to be saved for the backward pass; small test activations keep mean(x²) tiny.

Evidence: microsoft/onnxruntime#29043 (an fp16 simplified-layer-norm kernel whose variance reduction overflowed
half precision: inputs above ~7600 gave zeros), SKaiNET-developers/SKaiNET#1281 (an fp16 LayerNorm variance of
+Inf silently emitted zeros for some Whisper frames), tenstorrent/tt-metal#55159 (RMSNorm returning 0 where the
answer is ordinary because the sum of squares overflows).

Caught by: RMSNorm.rmsnorm_is_exact_up_to_the_overflow_threshold — in fp16 its rows reach |x| = 65504, every one
inside the domain.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG for fp16 rows with mean(x²) > 65504: the variance is rounded to the input dtype and overflows."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        variance = xc.pow(2).mean(dim=-1, keepdim=True).to(x.dtype)  # the bug: a half-precision variance buffer
        return (xc * torch.rsqrt(variance.to(xc.dtype) + self.eps) * self.weight.to(xc.dtype)).to(x.dtype)
