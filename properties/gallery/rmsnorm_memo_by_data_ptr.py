"""Pitfall: RMSNorm memoises its last result by the input's data_ptr, shape and dtype.

The mistake: to skip recomputing a norm the decode loop calls twice on the same activation, the module keeps its
last output keyed by ``(x.data_ptr(), x.shape, x.dtype)``. Memory is reused: once x is freed, the allocator hands
its bytes to the next activation of that shape — a new tensor with other values at the same address — and the
module returns the previous result.

Why people make it: a pointer looks like an identity; in a test every input is a fresh allocation that stays
alive, so addresses never repeat.

Evidence: test-only (caches keyed by data_ptr are a known hazard of caching allocators; no public report of this
norm is cited here).

Caught by: RMSNorm.rmsnorm_ignores_storage_reuse — a call on inputs in the memory of the previous call's.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG when an input reuses a freed input's memory: the previous result is returned."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape), x.dtype, x.requires_grad)
        memo = getattr(self, "_memo", None)
        if memo is not None and memo[0] == key:  # the bug: the address is not the identity of the values
            return memo[1].clone()
        y = super().forward(x)
        self._memo = (key, y.detach().clone())
        return y
