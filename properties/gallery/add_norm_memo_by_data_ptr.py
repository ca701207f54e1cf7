"""Pitfall: AddRMSNorm memoises (y, h) keyed by the data_ptr of x and of the residual.

The mistake: the fused add-norm keeps its last results keyed by the two input addresses (and shape, dtype). After
the inputs are freed, the allocator hands their memory to the next layer's tensors of the same shape: the key
matches and the previous (y, h) come back.

Why people make it: an address looks like an identity, and in tests every input stays alive.

Evidence: test-only (no public report of this kernel is cited here).

Caught by: AddRMSNorm.add_rmsnorm_ignores_storage_reuse — a call on inputs in the memory of the previous call's.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG when the inputs reuse freed inputs' memory: the previous (y, h) are returned."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        key = (x.data_ptr(), residual.data_ptr(), tuple(x.shape), x.dtype, x.requires_grad)
        memo = getattr(self, "_memo", None)
        if memo is not None and memo[0] == key:  # the bug
            return memo[1].clone(), memo[2].clone()
        y, h = super().forward(x, residual)
        self._memo = (key, y.detach().clone(), h.detach().clone())
        return y, h
