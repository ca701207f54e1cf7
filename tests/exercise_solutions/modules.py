"""Solution: RMSNorm and SwiGLU (week 6)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["RMSNorm", "SwiGLU"]


class RMSNorm(nn.Module):
    """RMSNorm (Zhang & Sennrich, 2019):  y = x / sqrt(mean(x², dim=-1) + eps) ⊙ weight.

    Computed in c = fp32 (fp64 for fp64 input), rounded once to x.dtype.
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        xc = x.to(c)
        rms_inv = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return (xc * rms_inv * self.weight.to(c)).to(x.dtype)


class SwiGLU(nn.Module):
    """SwiGLU FFN (Shazeer, 2020):  y = w_down(silu(w_gate(x)) ⊙ w_up(x)), in the module's dtype."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.dim, self.hidden_dim = dim, hidden_dim
        self.w_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.w_up = nn.Linear(dim, hidden_dim, bias=False)
        self.w_down = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))
