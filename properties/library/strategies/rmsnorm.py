"""RMSNorm's drawn cases: x and γ and eps (``rmsnorm_cases``), scaled by 2^k (``scaled_rmsnorm_cases``), one row
kept while the others are redrawn (``row_cases``), with a cotangent (``rmsnorm_grad_cases``), and rows on both
sides of the compute dtype's overflow threshold (``domain_cases``, ``overflow_threshold``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
from hypothesis import strategies as st

from golden.formats import fmt
from properties.library.strategies.code_paths import PathCase, path_values
from properties.library.strategies.values import (
    GAMMA_KINDS,
    ROW_KINDS,
    GradCase,
    cotangent,
    dims,
    eps_values,
    gammas,
    rows,
    summarise_kinds,
)
from properties.numerics import bounds


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


# RMSNorm's domain: rows whose sum of squares reaches the compute dtype's overflow threshold (laws/domain.py).
BELOW, BEYOND = (-1, -8), (1, 8)  # log2 of Σx² / threshold: inside the domain, outside it


def overflow_threshold(D: int, dtype: torch.dtype) -> float:
    """The largest Σx² inside the domain: ``bounds.rmsnorm``'s own overflow criterion, in the compute dtype the
    implementation declares (else the contract's: fp32, fp64 for fp64)."""
    return bounds.sum_of_squares_limit(D, bounds.compute_dtype(dtype))


def reaches_threshold(D: int, dtype: torch.dtype) -> bool:
    """Can a row of D finite values of ``dtype`` reach the threshold? Not fp16's in fp32 (65504²·D ≪ max_fp32)."""
    return math.sqrt(D) * fmt(dtype).max > math.sqrt(overflow_threshold(D, dtype))


class DomainCase(NamedTuple):
    """RMSNorm rows scaled to Σx² = 2^k·threshold (k < 0 inside the domain, k > 0 beyond it; fp16: |x| → 65504)."""

    case: RMSNormCase
    log2_ratio: tuple[int, ...]

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "log2(Σx²/threshold)": list(self.log2_ratio)}


def rows_at_threshold(rows: np.ndarray, ks: list[int], dtype: torch.dtype) -> np.ndarray:
    """``rows`` scaled to Σx² = 2^k·threshold, k from ``ks`` per row (fp16 cannot reach it: up to 65504·2^-|k|/8)."""
    D = rows.shape[-1]
    if not reaches_threshold(D, dtype):  # fp16: the top of its range, max |x| = 65504·2^-k/8 for k ∈ 1…8
        return rows / np.abs(rows).max(axis=-1, keepdims=True) * fmt(dtype).max * 2.0 ** (-np.abs(ks)[:, None] / 8)
    root = np.sqrt(overflow_threshold(D, dtype)) * 2.0 ** (np.array(ks, dtype=np.float64)[:, None] / 2)  # √ first: fp64
    return rows * (root / np.sqrt((rows**2).sum(axis=-1, keepdims=True)))


@st.composite
def domain_cases(draw: st.DrawFn, dtype: torch.dtype) -> DomainCase:
    """2–4 rows of a drawn D (non-zero mean, or constant), each at Σx² = 2^k·threshold, k ∈ ±(1…8), γ drawn."""
    D = draw(dims(max_dim=769), label="D")
    ks = draw(st.lists(st.integers(*BELOW[::-1]) | st.integers(*BEYOND), min_size=2, max_size=4), label="log2 ratios")
    rng = np.random.default_rng(draw(st.integers(0, 2**32), label="row seed"))
    rows = rng.standard_normal((len(ks), D)) + 0.5
    if draw(st.booleans(), label="constant rows?"):
        rows = np.ones_like(rows)
    ks = list(ks) if reaches_threshold(D, dtype) else [-abs(k) for k in ks]  # fp16: every row inside the domain
    x = torch.from_numpy(rows_at_threshold(rows, ks, dtype)).to(dtype)
    g = draw(gammas(D, dtype), label="gamma")
    return DomainCase(RMSNormCase(x, g.weight, 1e-6, ("large",) * len(ks), g.kind), tuple(ks))


# ---------------------------------------------------------------------------------------------- code-path sizes
def _path(name: str, N: int, D: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        rng = np.random.default_rng(N + D)
        w = torch.from_numpy(rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)).to(dtype)
        return PathCase(name, (path_values((N, D), dtype, N * D),), {"weight": w}, {"eps": 1e-6})

    return build


# The record's ``paths`` (laws/paths.py): the sizes where a row kernel switches code path
RMSNORM_PATHS: dict[str, Callable[[torch.dtype], PathCase]] = {
    "2^16 + 1 rows, D = 8": _path("2^16 + 1 rows, D = 8 (past a 65,535-program grid)", 2**16 + 1, 8),
    "2^17 + 3 rows, D = 4": _path("2^17 + 3 rows, D = 4 (past 65,535 programs of 2 rows)", 2**17 + 3, 4),
    "4,099 rows, D = 64": _path("4,099 rows, D = 64 (several narrow rows per program)", 4099, 64),
    "4,099 rows, D = 256": _path("4,099 rows, D = 256 (several rows per program)", 4099, 256),
    "D = 2^9 + 1": _path("5 rows, D = 513 = 2^9 + 1 (a one-element tail block)", 5, 513),
    "D = 2^12 + 1": _path("5 rows, D = 4097 = 2^12 + 1 (a one-element tail block)", 5, 4097),
    "D = 3·2^9": _path("5 rows, D = 1536 = 3·2^9 (not a power of two)", 5, 1536),
    "D = 2^11 − 1": _path("5 rows, D = 2047 = 2^11 − 1 (one short of a power of two)", 5, 2047),
}
