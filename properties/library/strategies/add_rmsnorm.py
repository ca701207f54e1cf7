"""AddRMSNorm's drawn cases: the stream r and the branch x of a drawn size relative to it (``add_rmsnorm_cases``),
with cotangents of both outputs (``add_rmsnorm_grad_cases``), and with IEEE corners of the sum
(``sum_corners``, ``add_rmsnorm_sum_cases``)."""

from __future__ import annotations

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
    cotangent,
    eps_values,
    gammas,
    rows,
    summarise_kinds,
)

# (y, h) = (RMSNorm(x + r), x + r): the stream r is drawn by ``rows`` in every row regime; the branch x relative to
# each stream row's scale, in one of BRANCH_KINDS:
#   small       |x| ≈ 2^-12 … 2^-3 of the stream: most of x's bits are rounded away in h (the two orders differ)
#   comparable  |x| ≈ 2^-1 … 2^1 of the stream
#   large       |x| ≈ 2^2 … 2^5 of the stream (2^2 … 2^3 in fp16: the sum stays below 65504)
#   cancelling  x ≈ −r up to 2^-12 … 2^-4 of the stream: h is small, its rounding exact (Sterbenz)
#   zero        x = 0: h = r exactly
BRANCH_KINDS = ("small", "comparable", "large", "cancelling", "zero")
_BRANCH_EXPS = {"small": (-12, -3), "comparable": (-1, 1), "large": (2, 5), "cancelling": (-12, -4)}


class AddRMSNormCase(NamedTuple):
    """Inputs of one AddRMSNorm check: the branch x and the stream r (..., D), γ (D,), eps, and their regimes."""

    x: torch.Tensor
    residual: torch.Tensor
    weight: torch.Tensor
    eps: float
    kinds: tuple[str, ...]  # the stream rows' regimes (ROW_KINDS)
    branch: str  # BRANCH_KINDS
    gamma: str

    def describe(self) -> dict[str, object]:
        return {
            "shape": tuple(self.x.shape),
            "D": self.x.shape[-1],
            "rows": summarise_kinds(self.kinds),
            "branch": self.branch,
            "gamma": self.gamma,
            "eps": self.eps,
        }


@st.composite
def add_rmsnorm_cases(
    draw: st.DrawFn,
    dtype: torch.dtype,
    *,
    kinds: tuple[str, ...] = ROW_KINDS,
    branches: tuple[str, ...] = BRANCH_KINDS,
    gamma_kinds: tuple[str, ...] = GAMMA_KINDS,
    max_dim: int | None = None,
    max_rows: int = 6,
    batch: tuple[int, ...] | None = None,
) -> AddRMSNormCase:
    """The stream r by ``rows`` (regimes ``kinds``; fp16 rows up to 2^10 so that r + x stays finite), the branch x
    scaled to each stream row (``branches``), γ by ``gammas``, eps by ``eps_values``."""
    fp16 = dtype == torch.float16
    stream = draw(
        rows(
            dtype, kinds=kinds, max_dim=max_dim, max_rows=max_rows, batch=batch, scale_exps=(-14, 10) if fp16 else None
        ),
        label="stream",
    )
    r, D = stream.x, stream.x.shape[-1]
    branch = draw(st.sampled_from(branches), label="branch")
    if branch == "zero":
        x = torch.zeros_like(r)
    else:
        lo, hi = _BRANCH_EXPS[branch]
        k = draw(st.integers(lo, min(hi, 3) if fp16 else hi), label="branch scale exponent")
        shape_kinds = ("normal", "mean_shifted", "outlier", "tiny_and_huge")
        unit = draw(rows(dtype, D, batch=tuple(r.shape[:-1]), kinds=shape_kinds, scale_exps=(0, 0)), label="branch")
        scale = torch.tensor([s if s > 0 else 1.0 for s in stream.scales], dtype=torch.float64) * 2.0**k
        x64 = unit.x.double() * scale.reshape(*r.shape[:-1], 1)
        x = (x64 - r.double() if branch == "cancelling" else x64).to(dtype)
    g = draw(gammas(D, dtype, gamma_kinds), label="gamma")
    e = draw(eps_values(), label="eps")
    return AddRMSNormCase(x, r, g.weight, e, stream.kinds, branch, g.kind)


class AddGradCase(NamedTuple):
    """An AddRMSNorm case and cotangents of both outputs, exact in the dtype."""

    case: AddRMSNormCase
    grad_y: torch.Tensor
    grad_h: torch.Tensor

    def describe(self) -> dict[str, object]:
        return self.case.describe()


@st.composite
def add_rmsnorm_grad_cases(draw: st.DrawFn, dtype: torch.dtype, max_dim: int = 256) -> AddGradCase:
    """An AddRMSNorm case (no zero or large stream rows in fp16: the derivative of such a row overflows fp16 or is
    eps-dominated) and random cotangents for y and for h."""
    kinds = tuple(k for k in ROW_KINDS if k not in ("large", "zero")) if dtype == torch.float16 else ROW_KINDS
    case = draw(add_rmsnorm_cases(dtype, kinds=kinds, max_dim=max_dim, max_rows=4), label="case")
    seed = draw(st.integers(0, 2**32), label="cotangent seed")
    shape = tuple(case.x.shape)
    return AddGradCase(case, cotangent(shape, dtype, seed), cotangent(shape, dtype, seed + 1))


def sum_corners(dtype: torch.dtype) -> tuple[tuple[float, float], ...]:
    """(x, r) pairs whose IEEE sum is a corner: −0 + −0 = −0, v − v = +0, ties to even (1 + u → 1, 1 + 3u → 1 + 4u
    with ulp(1) = 2u), an overflow (max + max; max + ½ulp(max), a tie that rounds to inf), ±inf, inf − inf, NaN."""
    f = fmt(dtype)
    u, big = 2.0**-f.p, f.max
    half_top = 2.0 ** (f.emax - f.p)  # ½·ulp(max)
    inf, nan = float("inf"), float("nan")
    return (
        (-0.0, -0.0),
        (1.5, -1.5),
        (1.0, u),
        (1.0 + 2 * u, u),
        (big, big),
        (big, half_top),
        (-big, -half_top),
        (inf, 1.0),
        (inf, -inf),
        (nan, 1.0),
    )


@st.composite
def add_rmsnorm_sum_cases(draw: st.DrawFn, dtype: torch.dtype) -> AddRMSNormCase:
    """An AddRMSNorm case (D ≤ 64), up to four elements of (x, r) replaced by a corner pair (:func:`sum_corners`)."""
    case = draw(add_rmsnorm_cases(dtype, max_dim=64), label="case")
    x, r = case.x.clone(), case.residual.clone()
    for k in range(draw(st.integers(0, min(4, x.numel())), label="corner elements")):
        i = draw(st.integers(0, x.numel() - 1), label=f"corner {k} index")
        a, b = draw(st.sampled_from(sum_corners(dtype)), label=f"corner {k}")
        x.view(-1)[i], r.view(-1)[i] = a, b
    return case._replace(x=x, residual=r)


# ---------------------------------------------------------------------------------------------- code-path sizes
def _path(name: str, N: int, D: int) -> Callable[[torch.dtype], PathCase]:
    """A stream of N rows of width D (the residual) and a branch of a quarter of its size (x)."""

    def build(dtype: torch.dtype) -> PathCase:
        rng = np.random.default_rng(N + D + 1)
        w = torch.from_numpy(rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)).to(dtype)
        r = path_values((N, D), dtype, N * D)
        x = (torch.from_numpy(np.random.default_rng(N * D + 1).standard_normal((N, D))) / 4).to(dtype)
        return PathCase(name, (x, r), {"weight": w}, {"eps": 1e-6})

    return build


# The record's ``paths`` (laws/paths.py): the sizes where a row kernel switches code path
ADD_RMSNORM_PATHS: dict[str, Callable[[torch.dtype], PathCase]] = {
    "2^16 + 1 rows, D = 8": _path("2^16 + 1 rows, D = 8 (past a 65,535-program grid)", 2**16 + 1, 8),
    "4,099 rows, D = 64": _path("4,099 rows, D = 64 (several narrow rows per program)", 4099, 64),
    "D = 2^12 + 1": _path("5 rows, D = 4097 = 2^12 + 1 (a one-element tail block)", 5, 4097),
}
