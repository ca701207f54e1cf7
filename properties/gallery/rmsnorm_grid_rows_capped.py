"""Pitfall: RMSNorm launches one program per row on a grid axis capped at 65,535 — rows past it are never written.

The mistake: the kernel maps rows to the grid's y axis (or clamps the grid to the axis' limit, 65,535 programs on
CUDA's y and z axes) and has no loop over the rows beyond it. Every row from 65,535 on keeps what the output
buffer held — zeros here. A batch of 64 sequences of 1,024 tokens is 65,536 rows: the last row of the batch is
garbage, and only past that size.

Why people make it: a grid of one program per row is the first thing one writes, and tests use a few hundred rows.

Evidence: ml-explore/mlx#2267 (a kernel's y grid dimension past 65,535: the launch failed at 2·4096 × 4·4096),
lablup/mlxcel#648 (long-prompt prefill aborted once a grid dimension exceeded 65,535), NVIDIA/raft#1586 (a y grid
size past 65,535 for large inputs).

Caught by: RMSNorm.rmsnorm_matches_golden_at_code_path_sizes — 2^16 + 1 rows, the last ones judged.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm"]

GRID_LIMIT = 65_535


class RMSNorm(nanolm_core.RMSNorm):
    """The reference on the first 65,535 rows; WRONG (zeros) on every row after."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        rows = y.reshape(-1, self.dim)
        if rows.shape[0] <= GRID_LIMIT:
            return y
        keep = torch.arange(rows.shape[0], device=y.device) < GRID_LIMIT  # the bug: no program for the rest
        return (rows * keep.unsqueeze(-1).to(y.dtype)).reshape(y.shape)
