"""Pitfall: a sliding attention window where the model has none — each query sees only the last 512 keys.

The mistake: the causal mask is banded: token t attends to keys s with t − 512 < s ≤ t. Every sequence of up
to 512 tokens is exact; past that, the earliest tokens silently drop out of every later token's attention.

Why people make it: a sliding-window config value is read whether or not the model enables it, or an
attention backend with windowing on by default serves a model trained with full attention; short test
prompts never reach the window.

Evidence: huggingface/transformers#38002 (``use_sliding_window: false`` ignored: logits past the 4096-token
window differ from full attention), EricLBuehler/mistral.rs#246 (a sliding-window KV cache sliced wrongly,
visible only when the sequence exceeds the window).

Caught by: Block.block_every_earlier_token_reaches_the_last — token 0 of a 1024-token sequence must reach the
last token, exactly (the drawn golden cases have T ≤ 8; the stored T = 1024 cases see it in fp32, 2.8× the
bound, but not in bf16, where the Block's bound is wider than the window's effect).
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "WindowedAttention"]

WINDOW = 512


class WindowedAttention(nanolm_core.Attention):
    """WRONG for T > 512: token t sees keys t − 511 … t only."""

    def mask(self, scores: torch.Tensor) -> torch.Tensor:
        T = scores.shape[-1]
        t = torch.arange(T, device=scores.device)
        seen = (t[None, :] <= t[:, None]) & (t[None, :] > t[:, None] - WINDOW)  # the bug: a band, not a triangle
        return scores.masked_fill(~seen, float("-inf"))


class Block(nanolm_core.Block):
    """The reference pre-norm block with a 512-token attention window."""

    attn_cls = WindowedAttention
