"""Pitfall: the fused add + norm launches one program per row on a grid axis capped at 65,535 — rows past it are
never written, neither y nor the updated stream h.

The mistake: the kernel maps tokens to the grid's y axis (or clamps the grid to the axis' limit, 65,535 programs
on CUDA's y and z axes) without a loop over the rows beyond it. A prefill of 64 sequences of 1,024 tokens is
65,536 rows: the last token's y and its residual stream keep whatever the output buffers held — zeros here —, and
the stream carries the damage into every later layer.

Why people make it: one program per token is the first grid one writes, and tests use a few hundred tokens.

Evidence: ml-explore/mlx#2267 (a kernel's y grid dimension past 65,535), lablup/mlxcel#648 (long-prompt prefill
aborted once a grid dimension exceeded 65,535), NVIDIA/raft#1586 (a y grid size past 65,535 for large inputs) —
the RMSNorm form is the rmsnorm_grid_rows_capped entry.

Caught by: AddRMSNorm.add_rmsnorm_matches_golden_at_code_path_sizes — 2^16 + 1 rows, the last ones judged.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["AddRMSNorm"]

GRID_LIMIT = 65_535


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """The reference on the first 65,535 rows; WRONG (zeros in y and h) on every row after."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = super().forward(x, residual)
        rows = y.reshape(-1, self.dim).shape[0]
        if rows <= GRID_LIMIT:
            return y, h
        keep = (torch.arange(rows, device=y.device) < GRID_LIMIT).unsqueeze(-1)  # the bug: no program for the rest
        return tuple((t.reshape(-1, self.dim) * keep.to(t.dtype)).reshape(t.shape) for t in (y, h))
