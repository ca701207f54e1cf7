"""Pitfall: a precision downgrade in the backward pass — W_down's weight gradient accumulated in bf16.

The mistake: forward and the input gradient are the reference's (fp32), but the weight-gradient GEMM
dW_down = Σ_rows γ ⊗ h takes bf16 operands and writes a bf16 result (the per-layer weight gradient rounded before
it reaches the fp32 parameter): every entry errs by ~2⁻⁹ relatively — far beyond what any order of an fp32 sum
over the rows can err.

Why people make it: a fused linear kernel whose wgrad epilogue writes in the activation dtype; gradient
accumulation chunk by chunk in the parameter's low dtype (a memory saving); an fp32 model run through a
bf16-only backward kernel.

Evidence: linkedin/Liger-Kernel#830 (weight gradients of a linear layer accumulated in bf16 chunk by chunk),
NVIDIA/Megatron-LM#6624 (the wgrad emitted in bf16 before the fp32 reduction).

Caught by: SwiGLU.swiglu_gradients_match_golden in fp32 (the pinned 160-row case: dW_down outside the bound).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class _Bf16WeightGrad(torch.autograd.Function):
    """y = h Wᵀ; dh = g W (in the input dtype), dW = gᵀ h computed on bf16 operands, rounded to bf16."""

    @staticmethod
    def forward(ctx: Any, h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(h, w)
        return h @ w.t()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, w = ctx.saved_tensors
        g2, h2 = g.reshape(-1, g.shape[-1]), h.reshape(-1, h.shape[-1])
        dw = (g2.t().to(torch.bfloat16) @ h2.to(torch.bfloat16)).to(w.dtype)  # the bug: wgrad in bf16
        return g @ w, dw


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: the reference forward; W_down's weight gradient formed in bf16."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.w_gate(x)) * self.w_up(x)
        return _Bf16WeightGrad.apply(h, self.w_down.weight)
