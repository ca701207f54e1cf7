"""Pitfall: a batch-variant kernel — the same row gives different bits for different batch sizes.

The mistake: the kernel picks its reduction strategy from the number of rows (tokens) it is
given: it splits each row's sum of squares into min(rows, D) partial sums (split-K, one partial
per worker), and a single token (decode) takes the latency path y = (x·r)·w while a batch
(prefill) takes y = x·(r·w). Both are accurate to an ULP or two — but not the same ULP,
so a token's output depends on which other requests share its batch.

Why people make it: choosing the kernel by problem size is standard practice for speed (split-K,
persistent kernels, different tile sizes). Every single test of accuracy passes; the symptom is
"temperature-0 inference is not deterministic" and a server that cannot reproduce itself.

Evidence: vllm-project/vllm#48391; Thinking Machines, "Defeating Nondeterminism in LLM Inference"
(2025). On CPU torch's ``F.rms_norm`` is batch-invariant, ``nn.Linear`` is not.

Caught by: RMSNorm.rmsnorm_is_batch_invariant — op(x[:k]) == op(x)[:k], bitwise. Shown in fp32
(in bf16 the final rounding hides most of the differing last bits).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG (not reproducible): y = x·rsqrt(ms + eps)·w, reduction order and association chosen by batch size."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc, w = x.to(upcast_dtype(x.dtype)), self.weight.to(upcast_dtype(x.dtype))
        rows = xc.numel() // self.dim
        parts = torch.tensor_split(xc.pow(2), max(1, min(rows, self.dim)), dim=-1)  # split-K by batch size
        ss = parts[0].sum(dim=-1, keepdim=True)
        for part in parts[1:]:
            ss = ss + part.sum(dim=-1, keepdim=True)
        r = torch.rsqrt(ss / self.dim + self.eps)  # (..., 1)
        y = (xc * r) * w if rows == 1 else xc * (r * w)  # the bug: the path depends on the batch size
        return y.to(x.dtype)
