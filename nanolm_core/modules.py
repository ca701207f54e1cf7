"""Normalisation and feed-forward layers of the modern block, with their 2017 contrasts.

Numerics policy (DESIGN): norms upcast fp16/bf16 to fp32 (fp64 stays fp64), compute in that
precision and round once to the input dtype; the FFNs run in the module's dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["LayerNorm", "RMSNorm", "ReLUFFN", "SwiGLU"]


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x², dim=-1) + eps) ⊙ w  (Zhang & Sennrich, 2019).

    x: (..., D) input; w: (D,) learnable gain ``weight`` (init 1); eps: added inside the square root.
    Casts: x and w are upcast to c = fp32 (fp64 for fp64 input), the whole product x·rsqrt(ms+eps)·w
    is computed in c, and the result is rounded once to x.dtype (the torch ``F.rms_norm`` / Gemma order).
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return (xc * r * self.weight.to(c)).to(x.dtype)


class LayerNorm(nn.Module):
    """y = (x − mean(x)) / sqrt(var(x) + eps) ⊙ w + b — the 2017 norm, for contrast with RMSNorm.

    var is the biased (1/D) variance; casts as in ``RMSNorm`` (compute in c, round once).
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "LayerNorm", self.weight)
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        centred = xc - xc.mean(dim=-1, keepdim=True)  # (..., D)
        r = torch.rsqrt(centred.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (centred * r * self.weight.to(c) + self.bias.to(c)).to(x.dtype)


class SwiGLU(nn.Module):
    """y = W_down (silu(W_gate x) ⊙ W_up x), silu(z) = z·σ(z)  (Shazeer, 2020).

    x: (..., D); W_gate, W_up: (F, D); W_down: (D, F); all bias-free ``nn.Linear``. Runs in the
    module dtype: each linear layer rounds its output to that dtype, as do silu and the product.
    """

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.dim, self.hidden_dim = dim, hidden_dim
        self.w_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.w_up = nn.Linear(dim, hidden_dim, bias=False)
        self.w_down = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class ReLUFFN(nn.Module):
    """y = W_2 relu(W_1 x + b_1) + b_2 with F = 4D — the 2017 FFN, two matrices (contrast)."""

    def __init__(self, dim: int, hidden_dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim
        self.w1 = nn.Linear(dim, hidden_dim or 4 * dim)
        self.w2 = nn.Linear(hidden_dim or 4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "ReLUFFN", self.w1.weight, same_dtype=True)
        return self.w2(F.relu(self.w1(x)))
