"""Pitfall: the Block's RoPE frequencies live in a non-persistent buffer computed at construction.

The mistake: as HF's rotary embeddings do, the attention registers inv_freq = θ^(−2i/K) as a buffer with
``persistent=False`` (no checkpoint carries it) and computes it in ``__init__``. A model built on the meta device
and materialised with ``to_empty`` (FSDP, low-memory loading) gets uninitialised memory there; ``load_state_dict``
does not touch it and no ``reset_parameters()`` recomputes it: every rotation angle is garbage.

Why people make it: an eagerly built module always has the buffer; the meta-device path needs an explicit re-init
that libraries add only after the bug bites.

Evidence: test-only (the inv_freq buffer is the known casualty of meta-device init; no public report is cited here).

Caught by: Block.block_survives_copies_moves_and_to_empty — to_empty, reset_parameters(), load_state_dict.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core import ModelConfig

__all__ = ["Block", "BufferedRopeAttention"]


class BufferedRopeAttention(nanolm_core.Attention):
    """RoPE tables from an inv_freq buffer set at construction (never refilled)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        K = config.head_dim
        inv_freq = config.rope_theta ** (-torch.arange(0, K, 2, dtype=torch.float64) / K)
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # the bug: computed here only

    def rope_tables(self, T: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, ...]:
        angles = torch.outer(torch.arange(T, dtype=torch.float64, device=device), self.inv_freq.double())
        angles = torch.cat([angles, angles], dim=-1)  # rotate-half: (T, K)
        return angles.cos().to(dtype), angles.sin().to(dtype)


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = BufferedRopeAttention
