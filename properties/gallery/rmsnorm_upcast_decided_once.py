"""Pitfall: RMSNorm decides at its first call whether to upcast — a module loaded and called in full precision,
then moved to bf16, sums x² in bf16.

The mistake: whether to upcast is decided once, at the first call (``self._upcast = x.dtype in (fp16, bf16)``),
and kept; without upcast the module computes in the input dtype. A checkpoint loaded and checked in fp32 or
fp64, then moved with ``.to(torch.bfloat16)`` — the everyday way to serve a model — keeps accumulating in the
input dtype: Σx² in bf16, an error of D·2⁻⁹. A module built in bf16 from the start upcasts and is exact.

Why people make it: dtype dispatch is hoisted out of the forward, and the tests build each module in the dtype
they test.

Evidence: none known in a public project; a test-only mutation that proves the protocol has power.

Caught by: RMSNorm.rmsnorm_matches_golden in bf16 under the protocol "moved after load" (loaded and called in
fp64, then ``.to(dtype)``).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """The reference with the compute dtype fixed at the first call — WRONG after a move to 16 bits."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        if not hasattr(self, "_upcast"):
            self._upcast = x.dtype in (torch.float16, torch.bfloat16)  # the bug: never revisited after .to(dtype)
        c = upcast_dtype(x.dtype) if self._upcast else x.dtype
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xc * r * self.weight.to(c)).to(x.dtype)
