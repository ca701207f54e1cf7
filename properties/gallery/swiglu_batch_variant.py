"""Pitfall: a SwiGLU that declares itself batch-invariant, with a down projection split by the token count.

The mistake: the kernel computes each token on its own (one row at a time: the same work whatever the batch),
and declares ``batch_invariant: True`` — but the down projection's sum over the F hidden units is split into
min(tokens, 4) chunks ("split-K", to keep every core busy when few tokens come), summed apart and added. Each
chunked sum is as accurate as the whole one, but a different number of chunks rounds differently: a token's
output bits depend on how many other tokens share its call.

Why people make it: choosing the work division by the problem size is what a fast GEMM does (split-K for a
small M); the chunk count looks like a scheduling detail, not a numerical one, and every accuracy test passes.

Evidence: torch-spyre/torch-spyre#3624 (a compiled matmul's K-split chosen by the batch size M: the same row
gives other results for another M); Thinking Machines, "Defeating Nondeterminism in LLM Inference" (2025).

Caught by: SwiGLU.swiglu_is_batch_invariant — f(x[:k]) == f(x)[:k] bitwise, required because the module
declares ``batch_invariant: True`` (undeclared, the law only measures it: nn.Linear is not batch-invariant on the
CPU). Shown in fp32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["CONVENTIONS", "SwiGLU", "split_down"]

CONVENTIONS = {"SwiGLU": {"batch_invariant": True, "notes": "one token at a time (claimed batch-invariant)"}}


def split_down(h: torch.Tensor, w_down: torch.Tensor, chunks: int) -> torch.Tensor:
    """W_down·h for one row h (1, F): the F products summed in ``chunks`` parts, the parts added in order."""
    parts = zip(h.tensor_split(chunks, dim=-1), w_down.tensor_split(chunks, dim=-1), strict=True)
    return sum(F.linear(hc, wc) for hc, wc in parts)  # (1, D)


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG for its declaration: each token alone, but the F-sum of W_down split in min(tokens, 4) chunks."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.dim)
        chunks = max(1, min(rows.shape[0], 4))  # the bug: the work division follows the token count
        out = []
        for row in rows.split(1):  # (1, D): every token the same kernel, whatever the batch
            h = F.silu(F.linear(row, self.w_gate.weight)) * F.linear(row, self.w_up.weight)  # (1, F)
            out.append(split_down(h, self.w_down.weight, chunks))
        return torch.cat(out).reshape(x.shape)
