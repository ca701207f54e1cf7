"""Pitfall: a post-norm Block where the contract (Llama) asks for pre-norm.

The mistake: h = norm₁(x + attn(x)), out = norm₂(h + ffn(h)) — the 2017 transformer's order —
instead of h = x + attn(norm₁(x)), out = h + ffn(norm₂(h)). The norm now sits *on* the residual
path: the gradient reaching layer 1 of an L-layer stack is rescaled by every norm on the way
(0.9 per layer gives 0.9³² ≈ 0.03 after 32 layers), so post-norm needs learning-rate warmup and
deep stacks train badly; pre-norm keeps an identity path.

Why people make it: "Attention Is All You Need" and many tutorials draw the norm after the
addition; both orders give a working model at 2–6 layers.

Evidence: Xiong et al., "On Layer Normalization in the Transformer Architecture" (2020);
Takase et al. (2022); huggingface/transformers#3929 (pre-norm added for gradient propagation in deep
stacks), lucidrains/vit-pytorch#56 (post-norm "was hard to train, often diverging"); the course's "why did
everyone switch to pre-norm" question.

Caught by: Block.block_preserves_gradient_through_depth — through 4 stacked blocks the gradient norm must
match the fp64 pre-norm stack's (the identity path keeps it ≈ 1; post-norm rescales it at every layer).
Block.block_is_identity_when_branches_are_zeroed sees it too: with zeroed branch outputs a post-norm block
returns norm₂(norm₁(x)), not x. (See also docs/grad_norm_vs_depth.png.)
"""

from __future__ import annotations

import nanolm_core

__all__ = ["Block"]


class Block(nanolm_core.PostNormBlock):
    """WRONG for this contract: h = norm₁(x + attn(x)), out = norm₂(h + ffn(h)) (post-norm)."""
