"""Pitfall: a tiled SwiGLU kernel does not reset the remainder tile's accumulator between tokens.

The mistake: the F hidden units are computed in tiles of 8192; the units past the last full tile go through a
remainder path whose accumulator is initialised once per launch, not once per token, so token t's remainder
hidden units carry token t−1's. Every F ≤ 8192 and every multiple of 8192 is exact; F = 28672 (Llama-3-70B)
mixes 4096 hidden units of each token into the next.

Why people make it: the accumulator reset sits inside the main tile loop; the remainder path, added later,
reuses the register block without it.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: SwiGLU.swiglu_tokens_are_independent — its pinned case runs 3 tokens through F = 28672 hidden units
(the drawn cases have F ≤ 1024).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]

TILE = 8192


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG for F > 8192, F mod 8192 ≠ 0 and ≥ 2 tokens: the remainder hidden units accumulate across tokens."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.w_gate(x)) * self.w_up(x)
        full = (self.hidden_dim // TILE) * TILE
        if full and full < self.hidden_dim and x.dim() >= 2:
            rows = h.reshape(-1, self.hidden_dim)
            rows = torch.cat([rows[:, :full], rows[:, full:].cumsum(dim=0)], dim=-1)  # the bug: never reset
            h = rows.reshape(h.shape)
        return self.w_down(h)
