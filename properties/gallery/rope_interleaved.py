"""Pitfall: RoPE in the interleaved convention where the contract says rotate-half.

The mistake: rotating the pairs (x_{2j}, x_{2j+1}) (Meta's original complex-number Llama code,
GPT-J) instead of (x_j, x_{j+K/2}) (HF Llama's ``rotate_half``). Both are valid RoPEs, with the
same frequencies θ_j = theta^(−2j/K); they differ by a fixed permutation of the wq/wk rows, which
checkpoint converters apply — so code and weights from different conventions silently disagree.

Why people make it: papers describe RoPE with complex numbers (consecutive pairs), while the most
popular implementation (HF) uses halves; and at position 0 (or T = 1) both are the identity.

Evidence: huggingface/candle#3948 (interleaved RoPE applied to checkpoints stored in the rotate-half
layout: quietly degraded output), raiyanyahya/how-to-train-your-gpt#6 (the two conventions mixed in one
implementation), EleutherAI/gpt-neox#834; the wq/wk permutation in HF's convert_llama_weights_to_hf.py.

Caught by: Block.block_matches_golden on any case with T ≥ 2 (its pinned example has T = 4; the golden
block uses rotate-half); Block.block_jacobian_is_identity_plus_branch sees it too.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "InterleavedRoPEAttention"]


class InterleavedRoPEAttention(nanolm_core.Attention):
    """WRONG for this contract: the reference attention with RoPE on consecutive pairs."""

    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """(x_{2j}, x_{2j+1}) ↦ rotation by t·θ_j (the tables' first half holds one angle per pair), in c."""
        half = x.shape[-1] // 2
        cos, sin, x = cos[..., :half], sin[..., :half], x.to(cos.dtype)
        x1, x2 = x[..., 0::2], x[..., 1::2]  # the bug: consecutive pairs, not halves
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Block(nanolm_core.Block):
    """The reference pre-norm block with interleaved RoPE."""

    attn_cls = InterleavedRoPEAttention
