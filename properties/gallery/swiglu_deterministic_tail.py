"""Pitfall: SwiGLU's deterministic fallback sums the hidden units in tiles and drops the partial last tile.

The mistake: under ``torch.use_deterministic_algorithms(True)`` the kernel replaces its atomic split-K reduction of
W_down's input by a fixed-order loop over tiles of 8 hidden units — and the loop runs F // 8 times, so the last
F mod 8 hidden units never reach the output. The default path is exact; reproducible training runs another one.

Why people make it: the deterministic path exists for a flag few tests set; it is written later than the fast path,
by analogy with it, and checked on the model's own F (a multiple of 256).

Evidence: test-only (deterministic fallbacks are separate code paths in real kernels; no public report of this one).

Caught by: SwiGLU.swiglu_holds_in_every_call_context — the call under deterministic algorithms must match golden.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]

TILE = 8


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG under deterministic algorithms: the hidden units past TILE·(F // TILE) are dropped."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.are_deterministic_algorithms_enabled():
            return super().forward(x)
        a = F.silu(self.w_gate(x)) * self.w_up(x)  # (..., F)
        w = self.w_down.weight  # (D, F)
        out = torch.zeros(*x.shape[:-1], self.dim, dtype=x.dtype, device=x.device)
        for t in range(self.hidden_dim // TILE):  # the bug: the partial last tile is never added
            tile = slice(t * TILE, (t + 1) * TILE)
            out = out + a[..., tile] @ w[:, tile].T
        return out
