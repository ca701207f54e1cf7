"""Pitfall: RMSNorm writes every result into one output buffer per module — the caller's earlier output changes.

The mistake: to avoid an allocation per call, the module keeps an output buffer and writes each result into it
(``torch.mul(…, out=self._out)``), reallocating only when the shape or dtype changes. Each returned tensor is
that buffer: a caller that keeps an output (a residual stream, a cached activation, the first of two outputs it
compares) sees it overwritten by the next call of the same shape. Every single call is exact.

Why people make it: persistent output buffers are what CUDA graphs and inference runtimes use, and a test calls
the module once and compares immediately.

Evidence: ROCm/torch_migraphx#247 (module outputs shared one preallocated buffer: out1 and out2 referenced the
same data), NVIDIA/TensorRT-Model-Connect#1126 (forward() returned tensors into a per-module staging buffer
that the next call overwrote).

Caught by: RMSNorm.rmsnorm_matches_golden under the protocol "held outputs" (the output kept while the module
runs again must not change, nor share memory with a later output).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """Values exact; WRONG ownership: outside autograd every output is the module's one buffer."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():
            return super().forward(x)
        check_features(x, self.dim, "RMSNorm", self.weight)
        out = getattr(self, "_out", None)
        if out is None or out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
            out = self._out = torch.empty(x.shape, dtype=x.dtype, device=x.device)  # the bug: reused
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        out.copy_(xc * r * self.weight.to(c))
        return out
