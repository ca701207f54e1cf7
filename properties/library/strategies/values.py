"""The values every component draws from: dtypes, exact low-precision floats, feature dims and batch shapes, eps,
rows by regime (``rows``, ``ROW_KINDS``), gains γ (``gammas``), linear weights, and cotangents (``cotangent``,
``GradCase``)."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import torch
from hypothesis import strategies as st

from golden.formats import fmt
from properties.library import context
from properties.library.table import ALL_DTYPES

# Feature dims: 1 (degenerate), odd and prime sizes (no power-of-two blocking hides a bug), a few powers of two.
FAST_DIMS = (1, 2, 3, 4, 7, 8, 16, 31, 64, 123, 128, 256, 769)
SLOW_DIMS = (1024, 2047, 4096, 8192)
ELEMENTWISE_MAX_D = 12
# Binade offsets of an element-wise drawn value, in shrink order: code 0 is 2^0, then nearby binades.
_BINADES = (0, -1, 1, -2, -3, -4, -5, -6)
# Row regimes: the structure of one row of x (see ``rows``).
ROW_KINDS = ("normal", "eps_dominated", "large", "mean_shifted", "outlier", "zero", "constant", "tiny_and_huge")


def dtypes() -> st.SearchStrategy[torch.dtype]:
    """One of fp64, fp32, fp16, bf16."""
    return st.sampled_from(ALL_DTYPES)


@st.composite
def exact_floats(
    draw: st.DrawFn,
    dtype: torch.dtype,
    *,
    min_exp: int | None = None,
    max_exp: int | None = None,
    allow_zero: bool = True,
    allow_negative: bool = True,
) -> float:
    """A finite float exactly representable in ``dtype``: ±(1 + m/2^p)·2^e with e in [min_exp, max_exp].

    Drawn as sign, binade and mantissa bits (shrinks to ±2^e, then towards 1.0); ``min_exp`` below the
    dtype's normal range reaches subnormals (rounded exactly onto the subnormal grid).
    """
    f = fmt(dtype)
    lo = f.emin - f.mantissa_bits if min_exp is None else min_exp
    hi = f.emax if max_exp is None else max_exp
    if allow_zero and draw(st.integers(0, 15), label="zero?") == 0:
        return 0.0
    e = draw(st.integers(lo, hi), label="binade")  # shrinks towards 2^0
    m = draw(st.integers(0, 2**f.mantissa_bits - 1), label="mantissa")
    negative = allow_negative and draw(st.booleans(), label="negative")
    value = math.ldexp(1.0 + m / 2**f.mantissa_bits, e)
    value = to_dtype_exact(value, dtype)
    return -value if negative else value


def to_dtype_exact(value: float, dtype: torch.dtype) -> float:
    """The dtype value nearest ``value`` (for constructed values that are already exact: the value itself)."""
    return float(torch.tensor(value, dtype=torch.float64).to(dtype).double())


def all_finite_values(dtype: torch.dtype) -> torch.Tensor:
    """Every finite value of a 16-bit dtype (65536 bit patterns minus inf/NaN), ascending bit order, as ``dtype``."""
    if dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"exhaustive enumeration needs a 16-bit dtype, got {dtype}")
    bits = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16)
    values = bits.view(dtype)
    return values[torch.isfinite(values)]


@st.composite
def dims(draw: st.DrawFn, max_dim: int | None = None, *, slow: bool | None = None) -> int:
    """A feature dimension D: the fast tier (1, 3, 123, 769, …), plus the slow tier (up to 8192) in thorough."""
    if slow is None:  # the profile of the run in progress decides (no run: the fast tier)
        ctx = context.current()
        slow = ctx.slow if ctx is not None else False
    choices = FAST_DIMS + (SLOW_DIMS if slow else ())
    if max_dim is not None:
        choices = tuple(d for d in choices if d <= max_dim) or (1,)
    if draw(st.integers(0, 3), label="arbitrary D?") == 0:
        return draw(st.integers(1, max(choices)), label="D")
    return draw(st.sampled_from(choices), label="D")


def batch_shapes(max_rows: int = 6) -> st.SearchStrategy[tuple[int, ...]]:
    """Leading shape of x: (), (N,) or (B, T) with at most ``max_rows`` rows in all."""
    return st.one_of(
        st.just(()),
        st.integers(1, max_rows).map(lambda n: (n,)),
        st.tuples(st.integers(1, 2), st.integers(1, max(1, max_rows // 2))),
    )


def eps_values() -> st.SearchStrategy[float]:
    """eps: Llama's 1e-6 and 1e-5, a large 1e-2 and a tiny 1e-12 (0 is excluded: the contract's rows may be zero)."""
    return st.sampled_from((1e-6, 1e-5, 1e-2, 1e-12))


class Rows(NamedTuple):
    """x of shape (*batch, D) in ``dtype`` and the regime of each row."""

    x: torch.Tensor
    kinds: tuple[str, ...]
    scales: tuple[float, ...]

    def describe(self) -> dict[str, object]:
        return {
            "shape": tuple(self.x.shape),
            "D": self.x.shape[-1],
            "rows": summarise_kinds(self.kinds),
            "row scales": sorted({f"{s:.3g}" for s in self.scales}),
        }


def summarise_kinds(kinds: tuple[str, ...]) -> str:
    counts: dict[str, int] = {}
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
    return ", ".join(f"{k}×{n}" if n > 1 else k for k, n in counts.items())


def _scale_range(dtype: torch.dtype) -> tuple[int, int]:
    # |x| ≤ 4·scale must stay finite; fp16 also has a small normal range (2^-14), the others do not care.
    return (-14, 13) if dtype == torch.float16 else (-14, 14)


def _decode(code: int, p: int) -> float:
    """One drawn integer → ±(1 + m/2^p)·2^e: low p bits the mantissa, 3 bits the binade, the top bit the sign.

    Code 0 is 1.0, so a shrunk element is 1.0, then a short mantissa in a nearby binade.
    """
    m, e, negative = code & (2**p - 1), _BINADES[(code >> p) & 7], code >> (p + 3)
    return (-1.0 if negative else 1.0) * math.ldexp(1 + m / 2**p, e)


@st.composite
def _row(
    draw: st.DrawFn, D: int, dtype: torch.dtype, kinds: tuple[str, ...], scale_exps: tuple[int, int] | None = None
) -> tuple[np.ndarray, str, float]:
    kind = draw(st.sampled_from(kinds), label="row kind")
    lo, hi = scale_exps or _scale_range(dtype)
    if kind == "eps_dominated":
        k = draw(st.integers(lo, max(lo, -10)), label="row scale exponent")  # ms ≤ 2^-20 ≈ 1e-6: comparable to eps
    elif kind == "large":
        k = draw(st.integers(min(8, hi), hi), label="row scale exponent")  # fp16: x² overflows above 256 = 2^8
    elif kind == "zero":
        return np.zeros(D), kind, 0.0
    else:
        k = draw(st.integers(max(lo, -4), min(hi, 4)) | st.integers(lo, hi), label="row scale exponent")
    scale = 2.0**k
    p = fmt(dtype).mantissa_bits
    if D <= ELEMENTWISE_MAX_D:
        codes = draw(st.tuples(*[st.integers(0, 2 ** (p + 4) - 1)] * D), label="element bit codes")
        row = np.array([_decode(c, p) for c in codes])
    else:
        rng = np.random.default_rng(draw(st.integers(0, 2**64 - 1), label="bulk seed"))
        row = rng.standard_normal(D).clip(-3.9, 3.9) / 2
    if kind == "constant":
        c = draw(exact_floats(dtype, min_exp=-2, max_exp=1, allow_zero=False), label="constant")
        row = np.full(D, c)
    elif kind == "mean_shifted":
        mean = draw(st.sampled_from((1.0, -1.0, 2.0, -2.0, 0.5, 1.5)), label="mean")
        row = row / 2 + mean  # |mean| ≥ spread: what subtracting the mean would destroy
    elif kind == "outlier":
        i = draw(st.integers(0, D - 1), label="outlier index")
        row = row / 8
        row[i] = draw(st.sampled_from((3.5, -3.5, 2.0, -3.0)), label="outlier")
    elif kind == "tiny_and_huge":
        row = row * np.where(np.arange(D) % 2 == 0, 1.0, 2.0**-10)  # dynamic range 2^10 inside one row
    row = row * scale
    return row, kind, scale


@st.composite
def rows(
    draw: st.DrawFn,
    dtype: torch.dtype,
    D: int | None = None,
    *,
    batch: tuple[int, ...] | None = None,
    kinds: tuple[str, ...] = ROW_KINDS,
    max_dim: int | None = None,
    max_rows: int = 6,
    scale_exps: tuple[int, int] | None = None,
) -> Rows:
    """x of shape (*batch, D), exact in ``dtype``, each row of a drawn regime (ROW_KINDS).

    ``scale_exps`` = (lo, hi) bounds the row scale 2^k (default 2^-14 … 2^13/2^14, see the module docstring).
    """
    D = draw(dims(max_dim), label="D") if D is None else D
    batch = draw(batch_shapes(max_rows), label="batch shape") if batch is None else batch
    n = math.prod(batch)
    drawn = [draw(_row(D, dtype, kinds, scale_exps), label=f"row {i}") for i in range(n)]
    data = np.stack([r for r, _, _ in drawn]) if drawn else np.zeros((0, D))
    x = torch.from_numpy(data).to(dtype).reshape(*batch, D)
    return Rows(x, tuple(k for _, k, _ in drawn), tuple(s for _, _, s in drawn))


class Gamma(NamedTuple):
    """RMSNorm weight γ of shape (D,) and its kind."""

    weight: torch.Tensor
    kind: str


GAMMA_KINDS = ("random_positive", "random_signed", "with_zeros", "ones", "tiny_and_large")


@st.composite
def gammas(draw: st.DrawFn, D: int, dtype: torch.dtype, kinds: tuple[str, ...] = GAMMA_KINDS) -> Gamma:
    """γ: random positive, random with both signs, with exact zeros, all ones, or spanning 2^-6 … 2^4."""
    kind = draw(st.sampled_from(kinds), label="gamma kind")
    rng = np.random.default_rng(draw(st.integers(0, 2**64 - 1), label="gamma seed"))
    g = rng.uniform(0.25, 2.0, D)
    if kind == "random_signed":
        g = g * rng.choice((-1.0, 1.0), D)
        if D > 1 and np.all(g > 0):
            g[0] = -g[0]
    elif kind == "with_zeros":
        g = g * rng.choice((-1.0, 1.0), D)
        g[rng.integers(0, D, max(1, D // 4))] = 0.0
    elif kind == "ones":
        g = np.ones(D)
    elif kind == "tiny_and_large":
        g = g * 2.0 ** rng.integers(-6, 5, D)
    return Gamma(torch.from_numpy(g).to(dtype), kind)


def linear_weight(
    out_features: int,
    in_features: int,
    dtype: torch.dtype,
    seed: int,
    scale: float = 1.0,
) -> torch.Tensor:
    """An (out, in) weight ~ N(0, scale²/in), exact in ``dtype`` (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((out_features, in_features)) * (scale / math.sqrt(max(1, in_features)))
    return torch.from_numpy(w).to(dtype)


class GradCase(NamedTuple):
    """A forward case and a cotangent ``grad_out`` of the output's shape, exact in the dtype."""

    case: Any
    grad_out: torch.Tensor

    def describe(self) -> dict[str, object]:
        return self.case.describe()


# The structure of the cotangents drawn in the current example, set by a call protocol
# (``protocols.COTANGENT_SUM`` …): "random", or what a reduction or a broadcast hands the backward — "sum" (all
# ones, as y.sum().backward()) and "row" (one random row repeated over the leading dims).
COTANGENT_KINDS = ("random", "sum", "row")
_COTANGENT_KIND: contextvars.ContextVar[str] = contextvars.ContextVar("nanolm_cotangent_kind", default="random")


@contextlib.contextmanager
def cotangents_of_kind(kind: str) -> Iterator[None]:
    """Within the block, ``cotangent`` draws cotangents of ``kind`` (COTANGENT_KINDS)."""
    if kind not in COTANGENT_KINDS:
        raise ValueError(f"unknown cotangent kind {kind!r}; expected one of {', '.join(COTANGENT_KINDS)}")
    token = _COTANGENT_KIND.set(kind)
    try:
        yield
    finally:
        _COTANGENT_KIND.reset(token)


def cotangent(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """A random cotangent ~ N(0, 1) of ``shape``, exact in ``dtype`` — or, under a protocol that asks for another
    structure (``cotangents_of_kind``), the cotangent of a sum (ones) or of a row broadcast over the rows."""
    kind = _COTANGENT_KIND.get()
    if kind == "sum":
        return torch.ones(shape, dtype=dtype)
    rng = np.random.default_rng(seed)
    g = torch.from_numpy(rng.standard_normal(shape)).to(dtype)
    if kind == "row" and len(shape) > 1:
        g = g.reshape(-1, shape[-1])[:1].expand(math.prod(shape[:-1]), shape[-1]).reshape(shape).contiguous()
    return g
