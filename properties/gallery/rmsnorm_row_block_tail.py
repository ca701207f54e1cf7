"""Pitfall: RMSNorm's many-narrow-rows path normalises blocks of 8 rows and forgets the last, partial block.

The mistake: for narrow rows (D ≤ 512) and many of them (≥ 4,096), the kernel switches to a path where each
program normalises a block of 8 rows; the grid is N // 8 programs — rounded down — so the last N mod 8 rows are
never normalised (they keep x). Fewer rows take the one-row-per-program path and are exact, as are row counts
divisible by 8.

Why people make it: the multi-row path is an optimisation for one regime (many short rows), added later, tested
on round sizes.

Evidence: BobMcDear/attorch#17 (an RMSNorm kernel wrong only when it blocks several rows together: a batch of
≥ 1,024 rows with narrow features).

Caught by: RMSNorm.rmsnorm_matches_golden_at_code_path_sizes — 4,099 rows of D = 64 and 256, the last ones judged.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm"]

MANY_ROWS, NARROW, BLOCK_ROWS = 4096, 512, 8


class RMSNorm(nanolm_core.RMSNorm):
    """The reference, except the last N mod 8 rows of ≥ 4,096 narrow rows come back un-normalised — WRONG."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        rows, xs = y.reshape(-1, self.dim), x.reshape(-1, self.dim)
        n = rows.shape[0]
        if n < MANY_ROWS or self.dim > NARROW or n % BLOCK_ROWS == 0:
            return y
        done = n // BLOCK_ROWS * BLOCK_ROWS  # the bug: the grid rounds the row blocks down
        return torch.cat([rows[:done], xs[done:]]).reshape(y.shape)
