"""Pitfall (Triton): the launcher caps the rows it covers at 65,535 (CUDA's y/z grid limit) and the kernel has no
loop over the rest — rows past it are never written.

The mistake: ``grid = (triton.cdiv(min(n_rows, 65_535), ROWS),)``: the author clamps the launch to the grid's limit
(one program per row on the y axis, later moved to row blocks) and forgets the grid-stride loop that would cover
the remaining rows. A prefill of 64 sequences of 1,024 tokens (65,536 rows) leaves the last token's output as
``torch.empty`` left it.

Why people make it: tests use a few hundred rows; the limit only bites at long prefills.

Evidence: ml-explore/mlx#2267 (a kernel's y grid dimension past 65,535), NVIDIA/raft#1586 (a y grid size past
65,535 for large inputs) — the torch form of the bug is the rmsnorm_grid_rows_capped entry.

Caught by: RMSNorm.rmsnorm_matches_golden_at_code_path_sizes — 2^16 + 1 rows, the last ones judged.
"""

from __future__ import annotations

from typing import Any

import torch
import triton

from properties.gallery import triton_rmsnorm

__all__ = ["RMSNorm"]

GRID_ROWS = 65_535


class RMSNorm(triton_rmsnorm.RMSNorm):
    """The Triton RMSNorm launched over at most 65,535 rows."""

    def launch_forward(self, x2: torch.Tensor, y: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor, eps: float,
                       meta: dict[str, Any]) -> None:  # fmt: skip
        n_rows, n_cols = x2.shape
        grid = (triton.cdiv(min(n_rows, GRID_ROWS), meta["ROWS"]),)  # WRONG: no program for the rows past it
        self.kernel[grid](x2, y, w, rstd, x2.stride(0), n_rows, n_cols, eps, **meta)
