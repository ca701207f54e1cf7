"""Exercise: RMSNorm and SwiGLU (week 6, step 1 and step 2). Replace each ``raise NotImplementedError``.

Notation: D = dim (features per token), F = hidden_dim (the FFN width, 8D/3 rounded up to 256).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["RMSNorm", "SwiGLU"]


def todo(what: str, formula: str, where: str) -> str:
    """The message of an unfinished exercise: what to write, the formula, and where."""
    return f"{what} is your exercise: implement {formula} in {where} (see its docstring)"


class RMSNorm(nn.Module):
    """RMSNorm (Zhang & Sennrich, 2019):  y = x / sqrt(mean(x², dim=-1) + eps) ⊙ weight.

    x: (..., D) — normalise each row (the last axis) on its own; weight: γ, shape (D,), starts at ones;
    eps: added *inside* the square root, so a row of zeros maps to zeros (not NaN).
    Example: x = [3, 4] → rms = √((9 + 16)/2) ≈ 3.54 → y = [0.85, 1.13] (same direction, no centring).
    Precision: for fp16/bf16 input, upcast x to fp32, compute there, and cast the result back to x.dtype
    (the sum of squares loses precision in bf16; fp16 overflows for |x| > 256). fp64 stays fp64.
    Common mistakes: subtracting the mean (that is LayerNorm), the wrong axis, forgetting weight,
    eps outside the square root, returning fp32 for bf16 input, modifying x in place.
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))  # γ (given: the name is part of the contract)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # TODO: about 4 lines. Compute in fp32 (fp64 for fp64 input), return x's dtype.
        raise NotImplementedError(
            todo("RMSNorm.forward", "y = x / sqrt(mean(x², dim=-1) + eps) * weight", "exercises_en/modules.py")
        )


class SwiGLU(nn.Module):
    """SwiGLU FFN (Shazeer, 2020):  y = w_down(silu(w_gate(x)) ⊙ w_up(x)),  silu(z) = z·σ(z).

    x: (..., D); w_gate, w_up: nn.Linear(D, F, bias=False); w_down: nn.Linear(F, D, bias=False).
    w_gate(x) decides "how much" (through silu), w_up(x) carries "what"; the product is elementwise.
    Example (F = 2): w_up(x) = (3, 3), w_gate(x) = (2, −2) → silu = (1.76, −0.24) → product (5.28, −0.72).
    Precision: run in the module's dtype (``torch.nn.functional.silu`` is accurate; z·(1 − σ(−z)) is not).
    Common mistakes: silu on w_up instead of w_gate, GELU instead of SiLU, F = 4D.
    """

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.dim, self.hidden_dim = dim, hidden_dim
        self.w_gate = nn.Linear(dim, hidden_dim, bias=False)  # given: names and shapes are the contract
        self.w_up = nn.Linear(dim, hidden_dim, bias=False)
        self.w_down = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # TODO: one expression.
        raise NotImplementedError(
            todo("SwiGLU.forward", "y = w_down(silu(w_gate(x)) * w_up(x))", "exercises_en/modules.py")
        )
