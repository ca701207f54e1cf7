"""RMSNorm's drawn cases: x and γ and eps (``rmsnorm_cases``), scaled by 2^k (``scaled_rmsnorm_cases``), one row
kept while the others are redrawn (``row_cases``), and with a cotangent (``rmsnorm_grad_cases``)."""

from __future__ import annotations

from typing import NamedTuple

import torch
from hypothesis import strategies as st

from properties.library.strategies.values import (
    GAMMA_KINDS,
    ROW_KINDS,
    GradCase,
    cotangent,
    eps_values,
    gammas,
    rows,
    summarise_kinds,
)


class RMSNormCase(NamedTuple):
    """Inputs of one RMSNorm check: x (..., D), γ (D,), eps, and the regimes they were drawn from."""

    x: torch.Tensor
    weight: torch.Tensor
    eps: float
    kinds: tuple[str, ...]
    gamma: str

    def describe(self) -> dict[str, object]:
        return {
            "shape": tuple(self.x.shape),
            "D": self.x.shape[-1],
            "rows": summarise_kinds(self.kinds),
            "gamma": self.gamma,
            "eps": self.eps,
        }


@st.composite
def rmsnorm_cases(
    draw: st.DrawFn,
    dtype: torch.dtype,
    *,
    kinds: tuple[str, ...] = ROW_KINDS,
    gamma_kinds: tuple[str, ...] = GAMMA_KINDS,
    eps: float | None = None,
    max_dim: int | None = None,
    max_rows: int = 6,
    batch: tuple[int, ...] | None = None,
    scale_exps: tuple[int, int] | None = None,
) -> RMSNormCase:
    """x drawn by ``rows`` (regimes ``kinds``), γ by ``gammas`` and eps by ``eps_values`` (unless fixed)."""
    x = draw(
        rows(dtype, kinds=kinds, max_dim=max_dim, max_rows=max_rows, batch=batch, scale_exps=scale_exps), label="x"
    )
    g = draw(gammas(x.x.shape[-1], dtype, gamma_kinds), label="gamma")
    e = draw(eps_values(), label="eps") if eps is None else eps
    return RMSNormCase(x.x, g.weight, e, x.kinds, g.kind)


class ScaledCase(NamedTuple):
    """An RMSNorm case and a power-of-two factor α = 2^k (k ≥ 0: α·x is exact, no overflow by construction)."""

    case: RMSNormCase
    log2_alpha: int

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "alpha": f"2^{self.log2_alpha}"}


@st.composite
def scaled_rmsnorm_cases(draw: st.DrawFn, dtype: torch.dtype) -> ScaledCase:
    """x and α = 2^k, k ∈ 0…10, with the row scale capped so that |α·x| ≤ 4·2^13 < 65504 in fp16."""
    k = draw(st.integers(0, 10), label="log2 alpha")
    hi = 13 - k if dtype == torch.float16 else 14
    kinds = ("normal", "mean_shifted", "outlier", "constant", "tiny_and_huge", "eps_dominated")
    case = draw(rmsnorm_cases(dtype, kinds=kinds, scale_exps=(-14, hi)), label="case")
    return ScaledCase(case, k)


class RowCase(NamedTuple):
    """An RMSNorm case with ≥ 2 rows, a row index i and ``other``: x with every row but i redrawn."""

    case: RMSNormCase
    i: int
    other: torch.Tensor

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "row": self.i}


@st.composite
def row_cases(draw: st.DrawFn, dtype: torch.dtype, *, min_rows: int = 2) -> RowCase:
    """x of shape (N, D) or (B, T, D) with N = B·T ≥ ``min_rows``, a row index, and x with the other rows redrawn."""
    batch = draw(
        st.integers(min_rows, 5).map(lambda n: (n,)) | st.tuples(st.integers(1, 2), st.integers(2, 3)),
        label="batch shape",
    )
    case = draw(rmsnorm_cases(dtype, batch=batch), label="case")
    flat = case.x.reshape(-1, case.x.shape[-1])
    i = draw(st.integers(0, flat.shape[0] - 1), label="row index")
    fresh = draw(rows(dtype, case.x.shape[-1], batch=(flat.shape[0],)), label="other rows").x
    other = fresh.clone()
    other[i] = flat[i]
    return RowCase(case, i, other.reshape(case.x.shape))


@st.composite
def rmsnorm_grad_cases(draw: st.DrawFn, dtype: torch.dtype, max_dim: int = 256) -> GradCase:
    """An RMSNorm case (no zero rows: the derivative of a zero row is eps-dominated but finite) and a cotangent."""
    kinds = tuple(k for k in ROW_KINDS if k != "large") if dtype == torch.float16 else ROW_KINDS
    case = draw(rmsnorm_cases(dtype, kinds=kinds, max_dim=max_dim, max_rows=4), label="case")
    return GradCase(case, cotangent(tuple(case.x.shape), dtype, draw(st.integers(0, 2**32), label="cotangent seed")))
