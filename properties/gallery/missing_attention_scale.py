"""Pitfall: attention scores without the 1/√K scale.

The mistake: softmax(q·kᵀ)·v instead of softmax(q·kᵀ/√K)·v. With unit-variance q and k the dot
product has variance K, so unscaled scores are √K times too large (8× for K = 64): the softmax
saturates towards one-hot and its gradient vanishes.

Why people make it: the scale is one easy-to-drop factor, fused attention APIs apply it by default or take
it as an argument whose default is 1 (so people "remove the duplicate" in the wrong place, or never pass
it), and a small model still trains.

Evidence: mlc-ai/mlc-llm#3426 (a fallback attention path called with sm_scale = 1.0: embeddings degraded),
delzac/cntkx#10; Vaswani et al. (2017) §3.2.1 explains the factor.

Caught by: Block.block_matches_golden on any case with T ≥ 2 (its pinned example has T = 4; with one
token the softmax is 1 whatever the scale); Block.block_jacobian_is_identity_plus_branch sees it too.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "UnscaledAttention"]


class UnscaledAttention(nanolm_core.Attention):
    """WRONG: out = W_o concat_h softmax(mask(q_h k_{g(h)}ᵀ)) v_{g(h)} — no 1/√K."""

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return q @ k.transpose(-2, -1)  # the bug: "/ √K" is missing


class Block(nanolm_core.Block):
    """The reference pre-norm block with unscaled attention."""

    attn_cls = UnscaledAttention
