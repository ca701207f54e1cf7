"""Pitfall: RoPE cos/sin tables cached in a class attribute, keyed by everything but the base θ.

The mistake: the tables depend on (T, K, θ, dtype, device); the cache is a dict on the *class*, shared by
every instance, keyed by (T, K, dtype, device). The first instance to ask for a shape fills it; every other
instance of that shape — a model with another ``rope_theta`` (Llama 2 uses 10⁴, Llama 3 5·10⁵) alive in the
same process — reads the first one's angles. A process with one model is exact.

Why people make it: a class-level (or module-level) cache is shared across layers to save memory, and the
key is written from the shapes that vary in one model; θ does not vary inside one model.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: Block.block_follows_its_module_lifecycle — two instances of different rope_theta, called in turn,
must each match golden.
"""

from __future__ import annotations

from typing import ClassVar

import torch

import nanolm_core

__all__ = ["Block", "SharedTableAttention"]


class SharedTableAttention(nanolm_core.Attention):
    """WRONG with two values of rope_theta in one process: tables cached per class, θ not in the key."""

    _tables: ClassVar[dict[tuple, tuple[torch.Tensor, torch.Tensor]]] = {}

    def rope_tables(self, T: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        key = (T, self.config.head_dim, dtype, str(device))  # the bug: rope_theta is not part of the key
        if key not in self._tables:
            self._tables[key] = super().rope_tables(T, dtype, device)
        return self._tables[key]


class Block(nanolm_core.Block):
    """The reference pre-norm block with a class-level RoPE table cache."""

    attn_cls = SharedTableAttention
