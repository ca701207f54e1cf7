"""SwiGLU whose dot products accumulate in bf16: every partial sum of W_gate·x, W_up·x and W_down·h is rounded to
bf16 (a GEMM without an fp32 accumulator). Other dtypes follow the reference."""

import torch
import torch.nn.functional as F

import nanolm_core


def _linear_bf16_accumulation(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    acc = torch.zeros((*x.shape[:-1], w.shape[0]), dtype=torch.bfloat16, device=x.device)
    for k in range(x.shape[-1]):  # sequential over the reduction axis, rounded to bf16 after every addition
        acc = acc + (x[..., k : k + 1].float() * w[:, k].float()).to(torch.bfloat16)
    return acc


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.bfloat16:
            return super().forward(x)
        g = _linear_bf16_accumulation(x, self.w_gate.weight)
        u = _linear_bf16_accumulation(x, self.w_up.weight)
        return _linear_bf16_accumulation(F.silu(g) * u, self.w_down.weight)
