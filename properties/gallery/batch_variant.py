"""Pitfall: a batch-variant kernel — the same row gives different bits for different batch sizes.

The mistake: the kernel picks its reduction strategy from the number of rows (tokens) it is given.
It splits each row's mean of squares over min(rows, D) workers ("split-K", to keep every core busy
when the batch is small) and merges the per-chunk means weighted by chunk size, as parallel
(Welford-style) reductions do: ms = Σ_c mean_c(x²)·|c|/D. Each merge is accurate to an ULP or two —
but a different number of chunks rounds differently, so a token's output depends on which other
requests share its batch. (Odd and even batch sizes also take two tile kernels that multiply x·r·w
in a different order.)

Why people make it: choosing the kernel by problem size is standard practice for speed (split-K,
persistent kernels, different tile sizes). Every single test of accuracy passes; the symptom is
"temperature-0 inference is not deterministic" and a server that cannot reproduce itself.

Evidence: vllm-project/vllm#48391; Thinking Machines, "Defeating Nondeterminism in LLM Inference"
(2025). On CPU torch's F.rms_norm is batch-invariant, nn.Linear is not.

Caught by: RMSNorm.rmsnorm_is_batch_invariant — op(x[:k]) == op(x)[:k], bitwise. Shown in fp32
(in bf16 the final rounding hides most of the differing last bits).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG (not reproducible): y = x·rsqrt(ms + eps)·w, ms merged from min(rows, D) chunk means."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc, w = x.to(upcast_dtype(x.dtype)), self.weight.to(upcast_dtype(x.dtype))
        rows = xc.numel() // self.dim
        chunks = torch.tensor_split(xc.pow(2), max(1, min(rows, self.dim)), dim=-1)  # the bug: split by batch size
        ms = sum(c.mean(dim=-1, keepdim=True) * (c.shape[-1] / self.dim) for c in chunks)  # (..., 1)
        r = torch.rsqrt(ms + self.eps)
        return ((xc * r) * w if rows % 2 else xc * (r * w)).to(x.dtype)  # odd/even batches: two tile kernels
