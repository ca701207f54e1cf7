"""Pitfall: under ``torch.inference_mode()`` the Block takes its decode path, which drops the causal mask.

The mistake: serving code calls the model under ``torch.inference_mode()`` and, for speed, the attention takes a
"decode" kernel there — written for one new query token against the cache, where a mask is pointless, so it
calls attention with ``is_causal=False``. A prompt of T > 1 tokens (prefill) goes through the same path and
every token reads the future. Training and ``no_grad`` evaluation take the masked path and are exact.

Why people make it: the mode is a convenient switch for "we are serving", and a single-token decode is what the
serving path was tested on.

Evidence: none known for this exact switch; sgl-project/sglang#33470 (buffers and paths that depend on whether
a call runs under inference_mode or no_grad) is the class. Kept as a test-only mutation.

Caught by: Block.block_matches_golden under the protocol "inference_mode".
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "DecodeAttention"]


class DecodeAttention(nanolm_core.Attention):
    """Causal everywhere except under inference_mode, where the mask is left out (the decode path) — WRONG."""

    def mask(self, scores: torch.Tensor) -> torch.Tensor:
        if torch.is_inference_mode_enabled():
            return scores  # the bug: the decode path assumes one query token
        return super().mask(scores)


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = DecodeAttention
