"""Pitfall: AddRMSNorm keeps its kernel per class, keyed by (D, dtype), with eps baked in at the first call.

The mistake: a fused add-norm kernel takes eps as a compile-time constant; the module compiles it at its first
call and caches it in a dict on the *class* (shared by every instance, as a JIT cache is), keyed by the shapes
and dtype only. The first instance of a width fixes eps for every other: a second model — or the final norm
of the same model, built with another eps — alive in the same process normalises with the first one's eps. A
process with one eps is exact.

Why people make it: compiled kernels are cached per shape to avoid recompiling; a value that is constant in one
model (eps) is left out of the key.

Evidence: test-only (no public report of this kernel is cited here).

Caught by: AddRMSNorm.add_rmsnorm_follows_its_module_lifecycle — a second instance of the same width with
another eps, called after the first, must match golden for its own eps.
"""

from __future__ import annotations

from typing import ClassVar

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same, upcast_dtype

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG with two values of eps at one width in one process: eps cached per class, keyed by (D, dtype)."""

    _kernels: ClassVar[dict[tuple[int, torch.dtype], float]] = {}

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        eps = self._kernels.setdefault((self.dim, x.dtype), self.eps)  # the bug: eps is not part of the key
        h = x + residual
        c = upcast_dtype(h.dtype)
        hc = h.to(c)
        return (hc * torch.rsqrt(hc.pow(2).mean(dim=-1, keepdim=True) + eps) * self.weight.to(c)).to(h.dtype), h
