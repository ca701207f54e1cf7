"""Pitfall: the residual added in place — ``x += attn(norm(x))`` overwrites the caller's tensor.

The mistake: h = x.add_(attn(attn_norm(x))): the block's output is right, but its input — the previous
layer's output, which the caller may still hold (for a skip, a cache or a comparison) — is changed.

Why people make it: ``x += f(x)`` is the idiomatic way to write a residual and saves one activation of
memory; it is harmless until someone else still needs x, and autograd only complains when x requires grad.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: Block.block_does_not_modify_input — x and every weight are bitwise unchanged after the call.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """Correct values; WRONG: h = x.add_(attn(attn_norm(x))) writes into the caller's x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.add_(self.attn(self.attn_norm(x)))  # the bug: in place
        return h + self.ffn(self.ffn_norm(h))
