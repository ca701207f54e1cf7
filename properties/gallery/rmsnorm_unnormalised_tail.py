"""Pitfall: a tiled RMSNorm kernel leaves the remainder tile of a wide row unnormalised.

The mistake: the row is walked in tiles of 2048 columns: a first pass sums x², a second writes x·r·γ tile by
tile — and the epilogue that handles the columns past the last full tile writes x·γ, forgetting r. Rows of at
most 2048 columns take the single-tile path and are exact, and so is every width that is a multiple of 2048
(4096, 8192, 16384); D = 5120 (Llama-13B) leaves 1024 columns unnormalised.

Why people make it: the remainder loop of a tiled kernel is written separately from the main loop, and it only
runs for widths that are not a multiple of the tile — none of the power-of-two widths tests like.

Evidence: facebookresearch/xformers#785 (a Triton layer norm whose columns past the block are handled wrongly),
vllm-project/vllm-ascend#5012 (part of each row left unprocessed by a norm kernel's launch geometry).

Caught by: RMSNorm.rmsnorm_output_has_norm_sqrt_d — its pinned model widths include D = 5120 (the drawn
rows stop at D = 769).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]

TILE = 2048


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG for D > 2048, D mod 2048 ≠ 0: the columns past the last full tile are written as x·γ."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.to(upcast_dtype(x.dtype))
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        scale = torch.ones_like(xc) * r
        full = (self.dim // TILE) * TILE
        if full and full < self.dim:
            scale[..., full:] = 1.0  # the bug: the remainder tile's epilogue forgets r
        return (xc * scale * self.weight.to(xc.dtype)).to(x.dtype)
