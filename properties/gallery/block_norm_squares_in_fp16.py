"""Pitfall: the Block's norms square bf16 activations in fp16, which overflows past |x| = 256.

The mistake: both pre-norms of the block use an fp16 reduction for bf16 inputs (see ``rmsnorm_squares_in_fp16``).
A residual stream with massive activations (hundreds to thousands in a few channels) makes every norm output zero:
the attention and the FFN see zeros, and the block returns its input unchanged.

Why people make it: the norm is shared by every layer; tested on unit-scale activations it is exact.

Evidence: test-only (no public report of this kernel is cited here).

Caught by: Block.block_matches_golden_at_real_magnitudes — bf16 inputs with massive channels.
"""

from __future__ import annotations

import nanolm_core
from properties.gallery import rmsnorm_squares_in_fp16

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """The reference pre-norm block with the norm above."""

    norm_cls = rmsnorm_squares_in_fp16.RMSNorm
