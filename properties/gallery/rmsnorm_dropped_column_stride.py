"""Pitfall: an RMSNorm kernel honours the column stride when it sums x² but not when it scales x.

The mistake: the kernel is given the row pointer and both strides; the variance pass loads x[i, j] at
``row + j·stride₁``, the normalise pass at ``row + j`` (as if the last dimension were contiguous). For a
contiguous x both are the same; for an x whose last dimension is strided (a transposed tensor) the row's RMS
is right and the values it scales are read from elsewhere — straight down a column. Nothing goes out of
bounds, nothing raises.

Why people make it: the stride argument is threaded through one loop and forgotten in the other, and the
tests only pass contiguous tensors (``x.view(-1, D)`` succeeds on a 2-D transposed x, so no guard fires).

Evidence: ModelTC/LightLLM#1467 (``_rms_norm_fwd_fused`` reads ``X + cols`` in the normalise pass after
using ``X + cols·x_stride1`` for the variance), flashinfer-ai/flashinfer#4060 (a Triton RMSNorm kernel that
loads ``x_row + offsets`` without the column stride), flagos-ai/FlagGems#1080 (a backward given a
non-contiguous dy read the wrong memory).

Caught by: RMSNorm.rmsnorm_ignores_memory_layout — the transposed view of x must give what its contiguous
copy gives.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


def scaled_values(x: torch.Tensor) -> torch.Tensor:
    """What the normalise pass loads: x's rows at x's row strides, but columns at unit stride."""
    return x.as_strided(x.shape, (*x.stride()[:-1], 1), x.storage_offset())


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG for x.stride(−1) ≠ 1: r from the right elements, the values it scales read at unit column stride."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        c = upcast_dtype(x.dtype)
        r = torch.rsqrt(x.to(c).pow(2).mean(dim=-1, keepdim=True) + self.eps)  # variance pass: strides honoured
        return (scaled_values(x).to(c) * r * self.weight.to(c)).to(x.dtype)  # the bug: column stride dropped
