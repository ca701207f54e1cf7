"""Pitfall: the attention splits its heads over the intra-op threads and never computes the remainder heads.

The mistake: each of ``torch.get_num_threads()`` workers takes H // threads heads; the H mod threads heads left
over are never computed (their output stays zero). With one thread nothing is left over; with three threads and
H = 4 one head in four is silently dropped — and with H = 2, every head.

Why people make it: the split is written for the thread count of the author's benchmark; tests run single-threaded.

Evidence: test-only (the class of a work split that drops its remainder; no public report of this kernel).

Caught by: Block.block_holds_in_every_call_context — the call under 3 threads must match golden.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "ThreadSplitAttention"]


class ThreadSplitAttention(nanolm_core.Attention):
    """WRONG with several threads: heads past threads·(H // threads) are zeros."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = self.expand_kv(k), self.expand_kv(v)
        H, threads = q.shape[1], torch.get_num_threads()
        per = H // threads
        out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
        for t in range(threads):  # the bug: heads threads·per … H − 1 are never computed
            h = slice(t * per, (t + 1) * per)
            probs = torch.softmax(self.mask(self.scores(q[:, h], k[:, h])), dim=-1)
            out[:, h] = probs @ v[:, h].to(probs.dtype)
        return out


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = ThreadSplitAttention
