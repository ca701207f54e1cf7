"""Pitfall: a fused FFN kernel that drops the tail of the hidden dimension.

The mistake: the kernel tiles the F hidden units in blocks of 8192 and launches ⌊F / 8192⌋ of them: the
last, partial tile is never computed, so for F not a multiple of the tile (F = 11008, 14336 …) the
hidden units past the last full tile contribute nothing to W_down·h.

Why people make it: a grid computed with floor division instead of a ceiling, and test shapes that are
multiples of the tile (F = 8192, 16384) or smaller than it.

Evidence: facebookresearch/xformers#785 (columns past the kernel's block never processed),
vllm-project/vllm-ascend#5012 (a launch grid too small for the problem: rows past it skipped).

Caught by: SwiGLU.swiglu_matches_stored_golden on the stored rows with F = 28672 (D = 256 in fp32, every
profile; D = 1024 in bf16 and the Llama-shaped rows, slow tier); the drawn cases have F ≤ 1024, inside one tile.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]

TILE = 8192


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG for F mod 8192 ≠ 0 and F > 8192: hidden units past the last full tile are dropped."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.w_gate(x)) * self.w_up(x)
        kept = max(TILE, (self.hidden_dim // TILE) * TILE)  # the bug: floor, not ceiling
        return F.linear(h[..., :kept], self.w_down.weight[:, :kept])
