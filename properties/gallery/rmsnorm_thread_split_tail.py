"""Pitfall: RMSNorm splits its rows over the intra-op threads and leaves the remainder rows unnormalised.

The mistake: the kernel gives each of ``torch.get_num_threads()`` workers N // threads rows and forgets the
N mod threads rows left over (the ceil-division of the work split), which keep the input's values. With one thread
— the setting every test runs in — nothing is left over and the result is exact; with several threads, every
batch whose row count is not a multiple of the thread count returns some rows un-normalised.

Why people make it: a work split by thread count is written once, for the default thread count of the author's
machine, and tested under a single-threaded harness; the remainder branch is the branch not taken.

Evidence: test-only (the class of a work split that drops its remainder; no public report of this exact kernel).

Caught by: RMSNorm.rmsnorm_holds_in_every_call_context — the call under 3 threads must match golden.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core.modules import rms_norm

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG with several threads: rows past threads·(N // threads) are returned as x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.dim)
        threads = torch.get_num_threads()
        per = rows.shape[0] // threads
        out = rows.clone()  # the bug: rows past threads·per are never written
        for t in range(threads):
            chunk = slice(t * per, (t + 1) * per)
            out[chunk] = rms_norm(rows[chunk], self.weight, self.eps)
        return out.reshape(x.shape)
