"""Pitfall: a RoPE table shorter than the sequence — positions past its end reuse earlier angles.

The mistake: the cos/sin tables are built once for a fixed number of positions (here 4: "enough for the
tests") and indexed modulo their length, so token t is rotated as token t mod 4. Every sequence that fits
the table is exact; longer ones silently get wrong relative positions.

Why people make it: tables are cached for speed and sized from a config value or the first call, and
short test sequences never reach the end.

Evidence: vllm-project/vllm-ascend#1266 (a sin/cos cache built shorter than the model's maximum position),
huggingface/transformers#27033 (a RoPE cache reused for lengths it was not built for).

Caught by: Block.block_matches_stored_golden — the stored Block cases have T ≥ 5 (the drawn cases of
Block.block_matches_golden stop at T = 4, inside the table).
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "ShortTableAttention"]

TABLE = 4  # positions the table was built for


class ShortTableAttention(nanolm_core.Attention):
    """WRONG past position 3: the reference attention with a 4-position RoPE table indexed modulo 4."""

    def rope_tables(self, T: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = super().rope_tables(TABLE, dtype, device)
        wrap = torch.arange(T, device=device) % TABLE  # the bug: positions ≥ 4 reuse the table's angles
        return cos[wrap], sin[wrap]


class Block(nanolm_core.Block):
    """The reference pre-norm block with a short RoPE table."""

    attn_cls = ShortTableAttention
