"""Pitfall: the fused add-norm kernel writes the residual sum on every row but normalises on a grid capped at 65,535.

The mistake: the fused kernel is launched with one program per row on a grid axis limited to 65,535 programs and no
loop over the rest; the elementwise residual add runs in a separate, unlimited pass. Past 65,535 rows — a batch of
64 sequences of 1,024 tokens — the updated stream h is right and the normalised y of the last rows is never written
(zeros here). Every smaller batch is exact.

Why people make it: the add is the easy part and is done on the flat tensor; the norm needs a program per row.

Evidence: ml-explore/mlx#2267 (a kernel's y grid dimension past 65,535), lablup/mlxcel#648 (long-prompt prefill
aborted once a grid dimension exceeded 65,535).

Caught by: AddRMSNorm.add_rmsnorm_matches_golden_at_code_path_sizes — 2^16 + 1 rows, the last ones judged.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["AddRMSNorm"]

GRID_LIMIT = 65_535


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """h exact on every row; y the reference on the first 65,535 rows, zero after — WRONG."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = super().forward(x, residual)
        rows = y.reshape(-1, self.dim)
        if rows.shape[0] <= GRID_LIMIT:
            return y, h
        keep = torch.arange(rows.shape[0], device=y.device) < GRID_LIMIT  # the bug: no program for the rest
        return (rows * keep.unsqueeze(-1).to(y.dtype)).reshape(y.shape), h
