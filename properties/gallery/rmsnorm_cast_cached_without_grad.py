"""Pitfall: RMSNorm caches γ's cast when it runs without autograd — and a recording call reuses the detached copy.

The mistake: outside autograd (``torch.no_grad()``, evaluation) the module caches the fp32 copy of γ it
multiplies by, refreshed whenever γ changes (its version counter) — so reloads and optimizer steps are seen. With
autograd on it casts γ afresh each call — unless a cached copy exists, which it reuses: that copy was made without
autograd and is detached, so no gradient reaches γ. Reentrant activation checkpointing runs every forward first
under ``no_grad`` and recomputes it in the backward with autograd on: γ never learns. A plain training step is
exact — and so is fp32, where the "cast" is γ itself.

Why people make it: the cache is built for inference; the reuse condition checks that γ has not changed, not how
the copy was made.

Evidence: none known in a public project; a test-only mutation that proves the protocol has power.

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "checkpoint (reentrant)" (and under
"modes switched": an evaluation under no_grad before the training call).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """The reference with a cached γ cast — WRONG (no dγ) once a no_grad call made the cache."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        c = upcast_dtype(x.dtype)
        key = (c, self.weight._version)
        cached = getattr(self, "_cast", None)
        if cached is not None and cached[0] == key:
            w = cached[1]  # the bug: a copy made without autograd, reused with autograd on
        else:
            w = self.weight.to(c)
            if not torch.is_grad_enabled() and not torch.is_inference_mode_enabled():
                self._cast = (key, w)
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xc * r * w).to(x.dtype)
