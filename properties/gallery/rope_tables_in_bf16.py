"""Pitfall: a precision downgrade in RoPE — the cos/sin tables cached in bf16 inside an fp32 block.

The mistake: the angles t·θ^(−2i/K) and their cos and sin are computed in fp32, then the tables are stored in
bf16 (a cache kept in the "model dtype") and read back for the rotation. Every entry errs by up to 2⁻⁹, so every
rotated q and k by ~2⁻⁹ of its size, at every position, and every score with them.

Why people make it: the tables are registered as buffers and converted with the module, or cast once to save
memory; in a bf16 model that is an accepted convention (HF rounds them to the model dtype), in an fp32 model it
silently throws away 16 bits of every rotation.

Evidence: KellerJordan/modded-nanogpt#39 (cos_cached and sin_cached cast to bfloat16), NVIDIA/Megatron-LM#744
(inv_freq and the cos/sin computations following the module's dtype), huggingface/transformers#29285.

Caught by: Block.block_matches_stored_golden in fp32 (T = 1024, far outside the probabilistic tier; inside the
deterministic one alone).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core.attention import rope_cos_sin

__all__ = ["Attention", "Block"]


class Attention(nanolm_core.Attention):
    """WRONG: the RoPE tables rounded to bf16 after they are computed in c."""

    def rope_tables(self, T: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, ...]:
        cos, sin = rope_cos_sin(T, self.config.head_dim, self.config.rope_theta, dtype, device)
        return cos.to(torch.bfloat16).to(dtype), sin.to(torch.bfloat16).to(dtype)  # the bug: a bf16 cache


class Block(nanolm_core.Block):
    """The reference pre-norm block with bf16 RoPE tables."""

    attn_cls = Attention
