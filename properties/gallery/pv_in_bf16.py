"""Pitfall: a precision downgrade in attention — the probabilities·values product in bf16 inside an fp32 block.

The mistake: the softmax is computed in fp32, but the second matmul of attention takes bf16 operands and returns
bf16 (the probabilities and v cast down, the T-term sums rounded to bf16): each head's output errs by ~2⁻⁹ of its
scale, thousands of fp32 ULPs, at every position.

Why people make it: a flash-attention style kernel that casts P to the input dtype before the second GEMM (right
for bf16 models, where it is an accepted convention) compiled into an fp32 path, or an autocast region around the
attention core only.

Evidence: none known in a public project; a test-only mutation that proves the law has power.

Caught by: Block.block_matches_stored_golden in fp32 (T = 1024: far outside the probabilistic tier).
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Attention", "Block"]


class Attention(nanolm_core.Attention):
    """WRONG: p·v computed on bf16 operands with a bf16 result."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = self.expand_kv(k), self.expand_kv(v)
        probs = torch.softmax(self.mask(self.scores(q, k)), dim=-1)
        out = probs.to(torch.bfloat16) @ v.to(torch.bfloat16)  # the bug: the p·v GEMM in bf16
        return out.to(probs.dtype)


class Block(nanolm_core.Block):
    """The reference pre-norm block with a bf16 p·v."""

    attn_cls = Attention
