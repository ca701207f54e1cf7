"""Normalisation and feed-forward layers of the modern block, with their 2017 contrasts.

Numerics policy (DESIGN): norms upcast fp16/bf16 to fp32 (fp64 stays fp64), compute in that
precision and round once to the input dtype; the FFNs run in the module's dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nanolm_core._checks import check_eps, check_features, check_same, check_size, upcast_dtype

__all__ = ["AddRMSNorm", "LayerNorm", "RMSNorm", "ReLUFFN", "SwiGLU", "rms_norm"]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x · rsqrt(mean(x², −1) + eps) · w computed in c = fp32 (fp64 for fp64 x), rounded once to x.dtype."""
    c = upcast_dtype(x.dtype)
    xc = x.to(c)
    r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
    return (xc * r * weight.to(c)).to(x.dtype)


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x², dim=-1) + eps) ⊙ w  (Zhang & Sennrich, 2019).

    x: (..., D) input; w: (D,) learnable gain ``weight`` (init 1); eps: added inside the square root.
    Casts: x and w are upcast to c = fp32 (fp64 for fp64 input), the whole product x·rsqrt(ms+eps)·w
    is computed in c, and the result is rounded once to x.dtype (the torch ``F.rms_norm`` / Gemma order).
    Accepts dim an integral number in 1 … 2**24 and eps a finite real ≥ 0 (else TypeError/ValueError naming
    it); x a float64/32/16/bf16 tensor (..., D) on the weight's device, of any of these dtypes.
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = check_size(dim, "dim", "RMSNorm"), check_eps(eps, "eps", "RMSNorm")
        self.weight = nn.Parameter(torch.ones(self.dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return rms_norm(x, self.weight, self.eps)


class AddRMSNorm(nn.Module):
    """h = x + r,  y = h / sqrt(mean(h², dim=-1) + eps) ⊙ w  — the residual add and the next pre-norm, as one module.

    x: (..., D) a branch output; r: (..., D) the residual stream (same shape and dtype); w: (D,) learnable gain
    ``weight`` (init 1); eps: added inside the square root. Returns (y, h): h is the updated stream.
    Casts: h = x + r is computed by torch in x.dtype (16-bit: in fp32, rounded once); y is ``RMSNorm``'s maths on that
    rounded h (upcast to c = fp32, fp64 for fp64; one rounding to x.dtype) — the unfused order. Fused kernels that
    normalise the unrounded sum are equally correct. Inputs are never modified; y and h are new tensors.
    Accepts dim and eps as ``RMSNorm`` does; x and r of the same shape (..., D), dtype and device.
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = check_size(dim, "dim", "AddRMSNorm"), check_eps(eps, "eps", "AddRMSNorm")
        self.weight = nn.Parameter(torch.ones(self.dim))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        h = x + residual  # (..., D), rounded once to x.dtype
        return rms_norm(h, self.weight, self.eps), h


class LayerNorm(nn.Module):
    """y = (x − mean(x)) / sqrt(var(x) + eps) ⊙ w + b — the 2017 norm, for contrast with RMSNorm.

    var is the biased (1/D) variance; casts and accepted arguments as in ``RMSNorm`` (compute in c, round once).
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = check_size(dim, "dim", "LayerNorm"), check_eps(eps, "eps", "LayerNorm")
        self.weight = nn.Parameter(torch.ones(self.dim))
        self.bias = nn.Parameter(torch.zeros(self.dim))

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
    Accepts D = dim and F = hidden_dim integral numbers in 1 … 2**24; x of shape (..., D) in the module's
    floating dtype, on its device.
    """

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.dim, self.hidden_dim = check_size(dim, "dim", "SwiGLU"), check_size(hidden_dim, "hidden_dim", "SwiGLU")
        self.w_gate = nn.Linear(self.dim, self.hidden_dim, bias=False)
        self.w_up = nn.Linear(self.dim, self.hidden_dim, bias=False)
        self.w_down = nn.Linear(self.hidden_dim, self.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class ReLUFFN(nn.Module):
    """y = W_2 relu(W_1 x + b_1) + b_2 with F = 4D — the 2017 FFN, two matrices (contrast); sizes as ``SwiGLU``."""

    def __init__(self, dim: int, hidden_dim: int | None = None) -> None:
        super().__init__()
        self.dim = check_size(dim, "dim", "ReLUFFN")
        self.hidden_dim = 4 * self.dim if hidden_dim is None else check_size(hidden_dim, "hidden_dim", "ReLUFFN")
        self.w1 = nn.Linear(self.dim, self.hidden_dim)
        self.w2 = nn.Linear(self.hidden_dim, self.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "ReLUFFN", self.w1.weight, same_dtype=True)
        return self.w2(F.relu(self.w1(x)))
