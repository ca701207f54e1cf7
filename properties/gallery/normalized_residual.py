"""Pitfall: adding the normalised x to the stream — the identity path disappears.

The mistake: n = norm(x); h = n + attn(n) instead of h = x + attn(norm(x)) (and the same in the
FFN half). The residual stream is replaced by its normalised copy at every layer, so the layer's
Jacobian is no longer I + ∂f/∂x but ∂norm/∂x · (I + ∂f/∂n): the clean gradient path of pre-norm
is gone, and the stream's scale is reset at every block.

Why people make it: "x = self.norm(x)" on its own line is the natural way to write "normalise
first"; the block still has a residual connection *somewhere*, and the loss still goes down.

Evidence: Howuhh/faster-trajectory-transformer#3, SHI-Labs/Compact-Transformers#25. The course:
"there is no dedicated test: it is caught by comparing logits in week 8" — here it is.

Caught by: Block.block_is_identity_when_branches_are_zeroed — with attn.wo and ffn.w_down zeroed a
pre-norm block must return x exactly (bitwise); this one returns norm₂(norm₁(x)).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_sequence

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """WRONG: n₁ = norm₁(x), h = n₁ + attn(n₁); n₂ = norm₂(h), out = n₂ + ffn(n₂)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.attn.config
        check_sequence(x, cfg.dim, cfg.max_seq_len, "Block", self.attn.wq.weight)
        x = self.attn_norm(x)  # the bug: the stream itself is overwritten by its normalised copy
        h = x + self.attn(x)  # (B, T, D)
        h = self.ffn_norm(h)  # … and again
        return h + self.ffn(h)
