"""Correct, the fused order of serving kernels (FlashInfer's ``fused_add_rmsnorm``, Triton kernels that add in fp32):
the sum s = x + r is formed in fp32 (fp64 for fp64), the norm reads s unrounded, h = fl(s) is stored rounded once.
No declaration: the undeclared bounds must admit it; ``DeclaredAddRMSNorm`` says so (norm_input "sum")."""

import torch

import nanolm_core
from nanolm_core.modules import rms_norm

CONVENTIONS = {"AddRMSNorm": {"norm_input": "sum", "source": "tests.correct_impls.add_norm_fused"}}


def fused(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float):
    c = torch.float64 if x.dtype == torch.float64 else torch.float32
    s = x.to(c) + residual.to(c)  # the unrounded sum (exact in fp32 unless the exponents are far apart)
    return rms_norm(s, weight, eps).to(x.dtype), s.to(x.dtype)


class AddRMSNorm(nanolm_core.AddRMSNorm):
    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return fused(x, residual, self.weight, self.eps)
