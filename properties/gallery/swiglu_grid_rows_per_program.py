"""Pitfall: the fused SwiGLU activation kernel handles two rows per program on a grid capped at 65,535 programs.

The mistake: silu(g) ⊙ u is computed by a kernel in which each program handles k = 2 rows, launched on a grid
axis limited to 65,535 programs (clamped, no loop over the rest): rows from 2 × 65,535 = 131,070 on are never
written, their hidden activation stays zero and so does their output. Every batch below 131,070 tokens is exact —
past the plain 65,535-row limit too.

Why people make it: blocking several rows per program pushes the limit out of the sizes anyone tests, but not
out of reach: a prefill of 32 sequences of 4,096 tokens is 131,072 rows.

Evidence: FlashML-org/FreeToken#186 (a kernel launched the flat token × top-k index on the grid's z axis: any
call with tokens × top_k past 65,535 failed, 8,192 tokens at top-k 8).

Caught by: SwiGLU.swiglu_matches_golden_at_code_path_sizes — 2^17 + 3 tokens, the last ones judged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core
from nanolm_core._checks import check_features

__all__ = ["SwiGLU"]

GRID_LIMIT, ROWS_PER_PROGRAM = 65_535, 2


class SwiGLU(nanolm_core.SwiGLU):
    """The reference, but the hidden activation of rows past 2 × 65,535 is never computed (zero) — WRONG."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        h = F.silu(self.w_gate(x)) * self.w_up(x)
        rows = h.reshape(-1, self.hidden_dim)
        covered = torch.arange(rows.shape[0], device=h.device) < GRID_LIMIT * ROWS_PER_PROGRAM  # the bug
        return self.w_down((rows * covered.unsqueeze(-1).to(h.dtype)).reshape(h.shape))
