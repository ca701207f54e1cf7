"""Pitfall: the FFN branch reads a detached copy of the stream — values right, a Jacobian term lost.

The mistake: out = h + ffn(ffn_norm(h.detach())): the forward value is exact, but the gradient reaching x
through the FFN branch is dropped, so ∂out/∂x = I + J_attn instead of (I + J_ffn)(I + J_attn).

Why people make it: ``.detach()`` is added to silence an autograd error, to save memory in a custom
checkpointing scheme, or while debugging, and never removed; every forward test passes.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: Block.block_jacobian_is_identity_plus_branch — vᵀ∂out/∂x must match the fp64 derivative of the
whole block within the derived bound.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """Correct values h = x + attn(attn_norm(x)), out = h + ffn(ffn_norm(h)); WRONG: the FFN reads h.detach()."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.attn_norm(x))
        return h + self.ffn(self.ffn_norm(h.detach()))  # the bug: the branch's gradient path is cut
