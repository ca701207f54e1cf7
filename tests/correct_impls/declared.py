"""Correct implementations that follow a *declared* convention, each with its CONVENTIONS (the laws honour them;
tests/running/test_conventions.py runs each with and without its declaration).

- ``Fp32ForFp64RMSNorm``   fp64 input computed in fp32 (HF's ``x.to(torch.float32)``): compute_dtype fp64 → fp32
- ``Bf16EpsRMSNorm``       eps stored in bf16 before it is added (a kernel taking eps as a bf16 scalar)
- ``FlushingRMSNorm``      subnormal inputs read as 0 and subnormal outputs returned as 0 (DAZ / FTZ)
- ``OffsetGainRMSNorm``    Gemma's gain: 1 + (γ − 1) formed in the compute dtype
- ``InterleavedBlock``     RoPE on consecutive pairs (Meta's layout): rope_layout interleaved
- ``Bf16SumRMSNorm``       Σx² accumulated in bf16 (squares rounded to bf16, pairwise bf16 additions)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core
from properties.gallery.rope_interleaved import Block as InterleavedBlock

__all__ = [
    "CONVENTIONS",
    "Bf16EpsRMSNorm",
    "Bf16SumRMSNorm",
    "FlushingRMSNorm",
    "Fp32ForFp64RMSNorm",
    "InterleavedBlock",
    "OffsetGainRMSNorm",
]


def _c(x: torch.Tensor) -> torch.dtype:
    return torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype


class Fp32ForFp64RMSNorm(nanolm_core.RMSNorm):
    """y = fl(x_32 · rsqrt(mean(x_32²) + eps) · w_32), x_32 = fl32(x): every input dtype computed in fp32."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x.float(), (self.dim,), self.weight.float(), self.eps).to(x.dtype)


class Bf16EpsRMSNorm(nanolm_core.RMSNorm):
    """The reference with eps' = fl_bf16(eps) added instead of eps."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        eps = float(torch.tensor(self.eps).to(torch.bfloat16))
        return F.rms_norm(x.to(_c(x)), (self.dim,), self.weight.to(_c(x)), eps).to(x.dtype)


def _flush(t: torch.Tensor, like: torch.dtype) -> torch.Tensor:
    """t with its subnormals of ``like`` set to 0 (the derivative stays 1: a flushing kernel's backward is the
    RMSNorm derivative, not the derivative of the flush)."""
    return t + (torch.where(t.abs() < torch.finfo(like).tiny, torch.zeros_like(t), t) - t).detach()


class FlushingRMSNorm(nanolm_core.RMSNorm):
    """The reference on x and γ with their subnormals (of the input dtype) read as 0; subnormal results → 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = _c(x)
        xs, w = _flush(x, x.dtype).to(c), _flush(self.weight, x.dtype).to(c)
        return _flush(F.rms_norm(xs, (self.dim,), w, self.eps).to(x.dtype), x.dtype)


class OffsetGainRMSNorm(nanolm_core.RMSNorm):
    """The reference multiplying by Gemma's gain g = fl_c(1 + fl_c(γ − 1)) (parameter ``weight`` = γ)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = _c(x)
        gain = 1.0 + (self.weight.to(c) - 1.0)  # both operations rounded in c: the declared offset
        return F.rms_norm(x.to(c), (self.dim,), gain, self.eps).to(x.dtype)


class Bf16SumRMSNorm(nanolm_core.RMSNorm):
    """The reference with Σx² accumulated in bf16: the squares rounded to bf16, summed pairwise in bf16."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = _c(x)
        xc = x.to(c)
        acc = (xc * xc).to(torch.bfloat16)
        while acc.shape[-1] > 1:  # pairwise: add the two halves (odd lengths padded with a zero) in bf16
            acc = F.pad(acc, (0, acc.shape[-1] % 2))
            half = acc.shape[-1] // 2
            acc = acc[..., :half] + acc[..., half:]
        r = torch.rsqrt(acc.to(c) / self.dim + self.eps)
        return (xc * r * self.weight.to(c)).to(x.dtype)


CONVENTIONS = {}  # each test module names the class and its declaration (see DECLARATIONS)

DECLARATIONS = {
    "Fp32ForFp64RMSNorm": ("RMSNorm", {"compute_dtype": {"fp64": "fp32"}}),
    "Bf16EpsRMSNorm": ("RMSNorm", {"eps_dtype": "bf16"}),
    "FlushingRMSNorm": ("RMSNorm", {"flush_subnormals": ["input", "output"]}),
    "OffsetGainRMSNorm": ("RMSNorm", {"weight_offset": 1.0}),
    "InterleavedBlock": ("Block", {"rope_layout": "interleaved"}),
    "Bf16SumRMSNorm": ("RMSNorm", {"accumulation_dtype": "bf16"}),
}
