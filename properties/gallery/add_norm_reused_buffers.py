"""Pitfall: the fused add + norm writes y and h into buffers it keeps — the next call overwrites what the caller holds.

The mistake: to avoid an allocation per call (and to have fixed addresses, as a CUDA graph's static outputs do),
the module allocates its two output buffers at the first call of each shape and returns them from then on. Each
result is right when it is returned; but the caller keeps h as its residual stream while the next layer's add +
norm runs — and that call writes its own h into the same buffer. The stream the first layer handed on changes
under the caller's feet.

Why people make it: serving code reuses static buffers deliberately (CUDA graph capture needs them), and a test
that checks one call at a time, or that compares a result before making the next call, cannot see it.

Evidence: sgl-project/sglang#23037 (hidden states read from a CUDA graph's output buffers without a copy:
"next replay will overwrite these slices").

Caught by: AddRMSNorm.add_rmsnorm_matches_golden under the call protocol "held outputs" — a result kept while the
module runs again must not change, nor overlap a later output.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """Correct values, WRONG lifetime: y and h live in buffers reused by every later call of the same shape."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        key = (tuple(x.shape), x.dtype, x.device)
        buffers = self.__dict__.setdefault("_buffers_by_shape", {})
        if key not in buffers:
            buffers[key] = (torch.empty_like(x), torch.empty_like(x))
        y, h = buffers[key]  # the bug: the same two tensors for every call of this shape
        with torch.no_grad():
            h.copy_(x + residual)
            y.copy_(rms_norm(h, self.weight, self.eps))
        return y, h
