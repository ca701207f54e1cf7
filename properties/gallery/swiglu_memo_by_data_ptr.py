"""Pitfall: SwiGLU caches its gate/up projections keyed by the input's data_ptr.

The mistake: the two projections of an input are kept in a cache keyed by ``(x.data_ptr(), x.shape, x.dtype)`` —
the way quantised-activation caches are keyed, to reuse work when the same activation is fed twice. Once x is
freed, the allocator hands its memory to the next activation of that shape; the cache hits and the FFN computes
with the previous input's projections.

Why people make it: an address looks like an identity, and in tests every input stays alive.

Evidence: test-only (caches keyed by data_ptr are a known hazard of caching allocators; no public report of this FFN
is cited here).

Caught by: SwiGLU.swiglu_ignores_storage_reuse — a call on inputs in the memory of the previous call's.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG when an input reuses a freed input's memory: the previous input's projections are used."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape), x.dtype, torch.is_grad_enabled())
        cached = getattr(self, "_projections", None)
        if cached is None or cached[0] != key:  # the bug: the address is not the identity of the values
            cached = (key, self.w_gate(x), self.w_up(x))
            self._projections = cached
        return self.w_down(F.silu(cached[1]) * cached[2])
