"""Pitfall: attention without the causal mask — every token reads the future.

The mistake: softmax(q·kᵀ/√K)·v over all positions: the step that sets the scores of later keys to −∞ is
left out (or built with ``triu`` where ``tril`` was meant, or skipped on one code path).

Why people make it: the mask is one line that an encoder (BERT, ViT) does not need, and fused kernels take
it as a flag that is easy to drop; with teacher forcing the model trains *better* than ever — by copying
the next token from its input — and then generates garbage.

Evidence: facebookresearch/xformers#103 (the causal mask skipped when no attention mask is passed),
keras-team/keras#23038 (the causal mask silently dropped on the non-fused path), paiml/entrenar#310.

Caught by: Block.block_is_causal — perturbing token s must leave outputs 0..s−1 bitwise unchanged.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "NonCausalAttention"]


class NonCausalAttention(nanolm_core.Attention):
    """WRONG: out = W_o concat_h softmax(q_h k_{g(h)}ᵀ / √K) v_{g(h)} — the reference with no mask."""

    def mask(self, scores: torch.Tensor) -> torch.Tensor:
        return scores  # the bug: later keys keep their scores


class Block(nanolm_core.Block):
    """The reference pre-norm block with the mask-less attention above."""

    attn_cls = NonCausalAttention
