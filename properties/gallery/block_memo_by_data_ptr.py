"""Pitfall: the Block memoises its output keyed by the input's data_ptr (a "prefix cache" by address).

The mistake: a serving-minded block keeps its last output keyed by ``(x.data_ptr(), x.shape, x.dtype)`` to skip a
recomputation when the same hidden states come back. Memory is reused: after x is freed the next batch of that
shape lands at the same address, and the block returns the previous batch's result.

Why people make it: in a test every input is a fresh allocation that stays alive, so an address never repeats.

Evidence: test-only (no public report of this block is cited here).

Caught by: Block.block_ignores_storage_reuse — a call on inputs in the memory of the previous call's.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """WRONG when an input reuses a freed input's memory: the previous result is returned."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape), x.dtype, x.requires_grad)
        memo = getattr(self, "_memo", None)
        if memo is not None and memo[0] == key:  # the bug
            return memo[1].clone()
        out = super().forward(x)
        self._memo = (key, out.detach().clone())
        return out
