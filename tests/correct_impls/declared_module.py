"""A complete correct implementation that departs from the reference only in ways it *declares*: every law must
pass (the fp64 gradchecks, which no bound models, are xfailed by the declaration). Its components:

- RMSNorm: every input dtype computed in fp32 (fp64 too), Gemma's gain 1 + (γ − 1) formed in fp32, eps stored in
  bf16, subnormal inputs and weights read as 0 and subnormal outputs returned as 0;
- SwiGLU: fp64 computed in fp32 (inputs and weights rounded to fp32), other dtypes as the reference;
- Block: RoPE on interleaved pairs (the gallery's Block, handed permuted W_q/W_k), fp64 computed in fp32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core
from properties.gallery.rope_interleaved import Block as _InterleavedBlock
from tests.correct_impls.declared import FlushingRMSNorm, _flush

__all__ = ["CONVENTIONS", "Block", "RMSNorm", "SwiGLU"]

CONVENTIONS = {
    "RMSNorm": {
        "compute_dtype": "fp32",
        "weight_offset": 1.0,
        "eps_dtype": "bf16",
        "flush_subnormals": ["input", "output"],
        "formula": "y = flush(fl(flush(x)_32 · rsqrt(mean(x²) + fl_bf16(eps)) · (1 + (γ − 1))_32))",
    },
    "SwiGLU": {"compute_dtype": {"fp64": "fp32"}},
    "Block": {"compute_dtype": {"fp64": "fp32"}, "rope_layout": "interleaved"},
}


class RMSNorm(FlushingRMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xs, w = _flush(x, x.dtype).float(), _flush(self.weight, x.dtype).float()
        gain = 1.0 + (w - 1.0)  # formed in fp32
        eps = float(torch.tensor(self.eps).to(torch.bfloat16))
        return _flush(F.rms_norm(xs, (self.dim,), gain, eps).to(x.dtype), x.dtype)


def _in_fp32(module: torch.nn.Module, x: torch.Tensor, forward) -> torch.Tensor:
    if x.dtype != torch.float64:
        return forward(x)
    params = {k: v.float() for k, v in module.named_parameters()}
    return torch.func.functional_call(module, params, (x.float(),)).double()


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _in_fp32(self, x, super().forward)


class Block(_InterleavedBlock):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _in_fp32(self, x, super().forward)
