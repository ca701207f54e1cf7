"""SwiGLU's drawn cases: x and the three weights (``swiglu_cases``), one token kept while the others are redrawn
(``swiglu_token_cases``), and with a cotangent (``swiglu_grad_cases``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from hypothesis import strategies as st

from properties.library.strategies.code_paths import PathCase, path_values
from properties.library.strategies.values import GradCase, Rows, cotangent, dims, linear_weight, rows, summarise_kinds


class SwiGLUCase(NamedTuple):
    """Inputs of one SwiGLU check: x (..., D) and the three weights in nn.Linear layout."""

    x: torch.Tensor
    w_gate: torch.Tensor  # (F, D)
    w_up: torch.Tensor  # (F, D)
    w_down: torch.Tensor  # (D, F)
    scale: float
    kinds: tuple[str, ...]

    @property
    def params(self) -> dict[str, torch.Tensor]:
        return {"w_gate.weight": self.w_gate, "w_up.weight": self.w_up, "w_down.weight": self.w_down}

    def describe(self) -> dict[str, object]:
        return {
            "shape": tuple(self.x.shape),
            "D": self.x.shape[-1],
            "F": self.w_gate.shape[0],
            "weight scale": self.scale,
            "rows": summarise_kinds(self.kinds),
        }


SWIGLU_ROW_KINDS = ("normal", "mean_shifted", "outlier", "zero", "constant", "tiny_and_huge", "eps_dominated")


@st.composite
def swiglu_cases(
    draw: st.DrawFn,
    dtype: torch.dtype,
    *,
    max_dim: int = 256,
    max_rows: int = 4,
    kinds: tuple[str, ...] = SWIGLU_ROW_KINDS,
    min_rows: int = 1,
) -> SwiGLUCase:
    """x and random SwiGLU weights; D and F independent (F may be < D), weight scale 2^-4 … 2^2.

    Row scales are capped at 2^6 in 16-bit dtypes so W·x stays far from overflow (fp16 max 65504).
    """
    D = draw(dims(max_dim), label="D")
    F = draw(st.sampled_from((1, 2, 5, 8, 3 * D, max(1, (8 * D) // 3))) | st.integers(1, max(1, 3 * D)), label="F")
    F = min(F, 4 * max_dim)
    batch = (draw(st.integers(min_rows, max(min_rows, max_rows)), label="tokens"),) if min_rows > 1 else None
    x = draw(rows(dtype, D, kinds=kinds, max_rows=max_rows, batch=batch), label="x")
    if dtype in (torch.float16, torch.bfloat16):
        x = Rows(x.x.clamp(-64, 64), x.kinds, x.scales)
    scale = 2.0 ** draw(st.integers(-4, 2), label="weight scale exponent")
    seed = draw(st.integers(0, 2**63 - 1), label="weight seed")
    w_gate, w_up = linear_weight(F, D, dtype, seed, scale), linear_weight(F, D, dtype, seed + 1, scale)
    w_down = linear_weight(D, F, dtype, seed + 2, scale)
    return SwiGLUCase(x.x, w_gate, w_up, w_down, scale, x.kinds)


class TokenCase(NamedTuple):
    """A SwiGLU case with ≥ 2 tokens, a token index i and ``other``: x with every token but i redrawn."""

    case: SwiGLUCase
    i: int
    other: torch.Tensor

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "token": self.i}


@st.composite
def swiglu_token_cases(draw: st.DrawFn, dtype: torch.dtype, max_dim: int = 128) -> TokenCase:
    """SwiGLU inputs of shape (N, D), N ≥ 2, a token index, and x with the other tokens redrawn."""
    case = draw(swiglu_cases(dtype, max_dim=max_dim, min_rows=2), label="case")
    x = case.x.reshape(-1, case.x.shape[-1])
    i = draw(st.integers(0, x.shape[0] - 1), label="token index")
    other = draw(rows(dtype, x.shape[-1], batch=(x.shape[0],), kinds=SWIGLU_ROW_KINDS), label="other tokens").x
    other = other.clamp(-64, 64) if dtype in (torch.float16, torch.bfloat16) else other
    other[i] = x[i]
    return TokenCase(case, i, other.reshape(case.x.shape))


@st.composite
def swiglu_grad_cases(draw: st.DrawFn, dtype: torch.dtype, max_dim: int = 64) -> GradCase:
    """SwiGLU inputs and a cotangent of the output's shape."""
    case = draw(swiglu_cases(dtype, max_dim=max_dim, max_rows=3), label="case")
    return GradCase(case, cotangent(tuple(case.x.shape), dtype, draw(st.integers(0, 2**32), label="cotangent seed")))


# ---------------------------------------------------------------------------------------------- code-path sizes
def _path(name: str, N: int, D: int, F: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        w = [linear_weight(o, i, dtype, N + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
        x = path_values((N, D), dtype, N * D, mean=0.25)
        params = dict(zip(("w_gate.weight", "w_up.weight", "w_down.weight"), w, strict=True))
        return PathCase(name, (x,), params)

    return build


# The record's ``paths`` (laws/paths.py): token counts and widths where a kernel switches code path
SWIGLU_PATHS: dict[str, Callable[[torch.dtype], PathCase]] = {
    "2^16 + 1 tokens": _path("2^16 + 1 tokens, D = F = 4 (past a 65,535-program grid)", 2**16 + 1, 4, 4),
    "2^17 + 3 tokens": _path("2^17 + 3 tokens, D = 2, F = 4 (past 65,535 programs of 2 rows)", 2**17 + 3, 2, 4),
    "4,099 tokens": _path("4,099 tokens, D = 32, F = 86 (many narrow rows)", 4099, 32, 86),
    "D, F = 2^k + 1": _path("3 tokens, D = 129, F = 257 (2^k + 1: one-element tail blocks)", 3, 129, 257),
}
