"""Hypothesis strategies for the laws: dtypes, exact low-precision values, shapes, rows by regime, weights, configs.

Every value is drawn *exactly representable* in the dtype under test, so the value Hypothesis shrinks to is
the value the implementation sees (no float32-then-cast). Small rows are drawn element by element from
bit patterns (sign, binade, mantissa), so they shrink element-wise; rows wider than ``ELEMENTWISE_MAX_D``
take their bulk from a drawn 64-bit seed (fast) and their structure (scale, mean, outlier, zero / constant
rows) from separate draws. Magnitudes are bounded on purpose: row scales 2^-14 … 2^13 (≈ 6e-5 … 8e3; the
fp16 upper end keeps |x| ≤ 4·2^13 < 65504 while x² overflows fp16 above 256).
Composite strategies return small NamedTuples.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import torch
from hypothesis import example
from hypothesis import strategies as st

from golden.formats import fmt
from nanolm_core.config import ModelConfig
from properties.library import context
from properties.library.table import ALL_DTYPES

__all__ = [
    "ADD_RMSNORM_PINS",
    "BACKWARD_PINS",
    "BACKWARD_T",
    "BLOCK_PINS",
    "BRANCH_KINDS",
    "CAUSAL_PINS",
    "COTANGENT_KINDS",
    "ELEMENTWISE_MAX_D",
    "EXTREME_LOGIT",
    "FAST_DIMS",
    "GAMMA_KINDS",
    "GRAD_PINS",
    "GRID_LIMIT",
    "HIDDEN_PINS",
    "LAYOUTS",
    "LOGIT_PINS",
    "LONG_T",
    "MANY_ROWS",
    "MODEL_HIDDEN",
    "MODEL_WIDTHS",
    "PATHS",
    "PROTOCOL_PINS",
    "RMSNORM_PINS",
    "ROW_KINDS",
    "ROW_PINS",
    "SHARP_BLOCK_PINS",
    "SLOW_DIMS",
    "SWIGLU_PINS",
    "SWIGLU_ROW_KINDS",
    "WIDTH_PINS",
    "WIDTH_ROW_PINS",
    "AddGradCase",
    "AddRMSNormCase",
    "BlockCase",
    "CausalCase",
    "Gamma",
    "GradCase",
    "PathCase",
    "Pin",
    "RMSNormCase",
    "RowCase",
    "Rows",
    "ScaledCase",
    "SwiGLUCase",
    "TokenCase",
    "add_rmsnorm_cases",
    "add_rmsnorm_grad_cases",
    "add_rmsnorm_sum_cases",
    "all_finite_values",
    "as_layout",
    "batch_shapes",
    "block_cases",
    "block_params",
    "causal_cases",
    "configs",
    "cotangent",
    "cotangents_of_kind",
    "dims",
    "dtypes",
    "eps_values",
    "exact_floats",
    "fixed_config",
    "gammas",
    "linear_weight",
    "long_block_case",
    "long_positions",
    "pinned",
    "rmsnorm_cases",
    "rmsnorm_grad_cases",
    "row_cases",
    "rows",
    "sampled_rows",
    "scaled_rmsnorm_cases",
    "sharp_block_cases",
    "sum_corners",
    "swiglu_cases",
    "swiglu_grad_cases",
    "swiglu_token_cases",
    "to_dtype_exact",
    "weight_as_layout",
]

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
            "rows": _summarise_kinds(self.kinds),
            "row scales": sorted({f"{s:.3g}" for s in self.scales}),
        }


def _summarise_kinds(kinds: tuple[str, ...]) -> str:
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
            "rows": _summarise_kinds(self.kinds),
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


@st.composite
def configs(draw: st.DrawFn, *, max_dim: int = 48, max_seq_len: int = 16) -> ModelConfig:
    """A small ModelConfig: H ∈ 1…4, G ∈ {1, H, a divisor strictly between}, even K, explicit small F."""
    H = draw(st.integers(1, 4), label="n_heads")
    divisors = [g for g in range(1, H + 1) if H % g == 0]
    G = draw(st.sampled_from(divisors), label="n_kv_heads")
    K = draw(st.sampled_from([k for k in (2, 4, 6, 8, 12, 16) if H * k <= max_dim]), label="head_dim")
    D = H * K
    F = draw(st.integers(1, 3 * D), label="ffn_dim")
    theta = draw(st.sampled_from((10000.0, 500000.0, 10.0)), label="rope_theta")
    eps = draw(st.sampled_from((1e-6, 1e-5)), label="norm_eps")
    return ModelConfig(
        dim=D,
        n_layers=1,
        n_heads=H,
        n_kv_heads=G,
        vocab_size=8,
        max_seq_len=max_seq_len,
        norm_eps=eps,
        rope_theta=theta,
        ffn_dim=F,
    )


def fixed_config(H: int, G: int, K: int, F: int | None = None, max_seq_len: int = 16) -> ModelConfig:
    """A config built from H, G, K (tests and examples)."""
    return ModelConfig(
        dim=H * K, n_layers=1, n_heads=H, n_kv_heads=G, vocab_size=8, max_seq_len=max_seq_len, ffn_dim=F or 2 * H * K
    )


class BlockCase(NamedTuple):
    """Inputs of one Block check: config, x (B, T, D) and the contract's state_dict."""

    config: ModelConfig
    x: torch.Tensor
    params: dict[str, torch.Tensor]
    scale: float
    logit_scale: float

    def describe(self) -> dict[str, object]:
        c = self.config
        return {
            "shape": tuple(self.x.shape),
            "D": c.dim,
            "config": f"H={c.n_heads} G={c.n_kv_heads} K={c.head_dim} F={c.ffn_dim} theta={c.rope_theta:g}",
            "weight scale": self.scale,
            "q/k scale": self.logit_scale,
        }


def block_params(
    config: ModelConfig,
    dtype: torch.dtype,
    seed: int,
    scale: float = 1.0,
    logit_scale: float = 1.0,
    gamma: str = "random",
) -> dict[str, torch.Tensor]:
    """The contract's Block state_dict with random weights (q/k scaled by ``logit_scale`` for large logits)."""
    D, H, G, K, F = config.dim, config.n_heads, config.n_kv_heads, config.head_dim, config.ffn_dim
    rng = np.random.default_rng(seed)

    def g() -> torch.Tensor:
        v = rng.uniform(0.5, 1.5, D) * (rng.choice((-1.0, 1.0), D) if gamma == "random" else 1.0)
        return torch.from_numpy(v if gamma == "random" else np.ones(D)).to(dtype)

    def w(o: int, i: int, s: float) -> torch.Tensor:
        return linear_weight(o, i, dtype, int(rng.integers(0, 2**63 - 1)), s)

    return {
        "attn_norm.weight": g(),
        "ffn_norm.weight": g(),
        "attn.wq.weight": w(H * K, D, logit_scale),
        "attn.wk.weight": w(G * K, D, logit_scale),
        "attn.wv.weight": w(G * K, D, scale),
        "attn.wo.weight": w(D, H * K, scale),
        "ffn.w_gate.weight": w(F, D, scale),
        "ffn.w_up.weight": w(F, D, scale),
        "ffn.w_down.weight": w(D, F, scale),
    }


@st.composite
def block_cases(
    draw: st.DrawFn, dtype: torch.dtype, *, max_dim: int = 48, max_tokens: int = 6, config: ModelConfig | None = None
) -> BlockCase:
    """A config, x of shape (B, T, D) with B ∈ 1…2, T ∈ 1…max_tokens, and random weights.

    q/k weight scale up to 2^3 reaches attention logits of tens (near one-hot softmax rows).
    """
    config = draw(configs(max_dim=max_dim), label="config") if config is None else config
    B = draw(st.integers(1, 2), label="B")
    T = draw(st.integers(1, max_tokens), label="T")
    kinds = ("normal", "mean_shifted", "outlier", "constant", "tiny_and_huge")
    x = draw(rows(dtype, config.dim, batch=(B, T), kinds=kinds), label="x").x
    if dtype in (torch.float16, torch.bfloat16):
        x = x.clamp(-64, 64)
    scale = 2.0 ** draw(st.integers(-3, 1), label="weight scale exponent")
    logit_scale = 2.0 ** draw(st.integers(-2, 3), label="q/k scale exponent")
    seed = draw(st.integers(0, 2**63 - 1), label="weight seed")
    return BlockCase(config, x, block_params(config, dtype, seed, scale, logit_scale), scale, logit_scale)


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
            "rows": _summarise_kinds(self.kinds),
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


class Pin:
    """A pinned case for ``@example(data=Pin(...))``: stands in for ``data`` and returns the case it builds.

    Laws draw exactly one composite case (label "case"); a Pin answers that draw with ``build(dtype)``,
    the dtype of the law run in progress (fp32 outside a run). A law run under call protocols
    (``properties.library.protocols``) also draws its protocol (label "protocol"): a Pin answers that with its
    own ``protocol`` (None: the plain call), ``Pin.under(p)`` is the same case under protocol p.
    """

    def __init__(self, name: str, build: Callable[[torch.dtype], Any], protocol: Any = None) -> None:
        self.name, self.build, self.protocol = name, build, protocol

    def draw(self, strategy: Any, label: str | None = None) -> Any:
        if label == "protocol":
            return self.protocol
        ctx = context.current()
        return self.build(ctx.dtype if ctx is not None else torch.float32)

    def under(self, protocol: Any) -> Pin:
        """This pin's case, called under ``protocol``."""
        return Pin(self.name, self.build, protocol)

    def __repr__(self) -> str:
        return f"Pin({self.name!r})" if self.protocol is None else f"Pin({self.name!r}, under {self.protocol})"


def _rows_case(
    values: list[list[float]],
    kinds: tuple[str, ...],
    eps: float = 1e-6,
    gamma: str = "random_signed",
) -> Callable[[torch.dtype], RMSNormCase]:
    def build(dtype: torch.dtype) -> RMSNormCase:
        x = torch.tensor(values, dtype=torch.float64).to(dtype)
        D = x.shape[-1]
        w = torch.linspace(-1.5, 1.75, D, dtype=torch.float64) if gamma != "ones" else torch.ones(D)
        if gamma == "tiny_and_large":  # |γ| from 2^-8 to 2^4: a gain far from 1 (Gemma's 1 + w loses γ's bits)
            w = w * 2.0 ** torch.linspace(-8, 4, D, dtype=torch.float64).round()
        return RMSNormCase(x, w.to(dtype), eps, kinds, gamma)

    return build


def _fp16_safe(v: float, dtype: torch.dtype) -> float:
    return min(v, 3e4) if dtype == torch.float16 else v


def _subnormal_row(dtype: torch.dtype) -> RMSNormCase:
    # Smallest normal: the row lies entirely below it (fp64 uses fp32's: x² of fp64 subnormals underflows to 0
    # in any fp64 computation, and bounds.rmsnorm does not yet cover that regime).
    tiny = float(torch.finfo(torch.float32 if dtype == torch.float64 else dtype).tiny)
    x = torch.tensor([[tiny / 2, -tiny / 4, tiny / 8, tiny * 0.75, -tiny / 2**3, 0.0]], dtype=torch.float64)
    return _rows_case(x.tolist(), ("eps_dominated",), eps=1e-6)(dtype)


def _wide_rows(dtype: torch.dtype, D: int = 512, n: int = 2) -> RMSNormCase:
    # Full-mantissa values of non-zero mean (seeded, exact in dtype): long reductions show their rounding here.
    x = torch.from_numpy(np.random.default_rng(D).standard_normal((n, D)) + 0.5).to(dtype)
    w = torch.from_numpy(1 + 0.1 * np.random.default_rng(D + 1).standard_normal(D)).to(dtype)
    return RMSNormCase(x, w, 1e-6, ("normal", "mean_shifted"), "random_positive")


def _wide_row_case(dtype: torch.dtype) -> RowCase:
    # Four full-mantissa rows, k = 1: a kernel whose reduction depends on the row count shows it here.
    case = _wide_rows(dtype, D=1024, n=4)
    return RowCase(case, 0, case.x.flip(0).contiguous())


RMSNORM_PINS = {
    "wide rows, D=512": Pin("wide rows, D=512", _wide_rows),
    "subnormal row": Pin("subnormal row", _subnormal_row),
    "zero row": Pin(
        "zero row", _rows_case([[0.0] * 8, [1.0, -2.0, 3.0, 0.5, 0.25, -1.0, 2.0, 1.5]], ("zero", "normal"))
    ),
    "one huge outlier": Pin(
        "one huge outlier",
        lambda dt: _rows_case([[_fp16_safe(2.0**14, dt)] + [2.0**-6] * 6 + [-(2.0**-6)]], ("outlier",))(dt),
    ),
    "eps-dominated": Pin(
        "eps-dominated",
        _rows_case([[1e-4, -2e-4, 3e-4, 1e-4, -1e-4, 2e-4]], ("eps_dominated",), eps=1e-6, gamma="ones"),
    ),
    "fp16 |x| > 256": Pin("fp16 |x| > 256", _rows_case([[300.0, -512.0, 1000.0, 257.0]], ("large",), gamma="ones")),
    "gains 2^-8 … 2^4": Pin(
        "gains 2^-8 … 2^4",
        _rows_case([[1.0, -2.0, 3.0, 0.5, 0.25, -1.0, 2.0, 1.5]], ("normal",), gamma="tiny_and_large"),
    ),
    "constant row, mean 3": Pin(
        "constant row, mean 3", _rows_case([[3.0] * 5, [3.0, 3.5, 2.5, 3.0, 4.0]], ("constant", "mean_shifted"))
    ),
}


ROW_PINS = {"four wide rows, k=1": Pin("four wide rows, k=1", _wide_row_case)}


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


@st.composite
def rmsnorm_grad_cases(draw: st.DrawFn, dtype: torch.dtype, max_dim: int = 256) -> GradCase:
    """An RMSNorm case (no zero rows: the derivative of a zero row is eps-dominated but finite) and a cotangent."""
    kinds = tuple(k for k in ROW_KINDS if k != "large") if dtype == torch.float16 else ROW_KINDS
    case = draw(rmsnorm_cases(dtype, kinds=kinds, max_dim=max_dim, max_rows=4), label="case")
    return GradCase(case, cotangent(tuple(case.x.shape), dtype, draw(st.integers(0, 2**32), label="cotangent seed")))


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


def _swiglu_pin(x: list[list[float]], F: int, kinds: tuple[str, ...]) -> Callable[[torch.dtype], SwiGLUCase]:
    def build(dtype: torch.dtype) -> SwiGLUCase:
        xt = torch.tensor(x, dtype=torch.float64).to(dtype)
        D = xt.shape[-1]
        wg, wu, wd = linear_weight(F, D, dtype, 1), linear_weight(F, D, dtype, 2), linear_weight(D, F, dtype, 3)
        return SwiGLUCase(xt, wg, wu, wd, 1.0, kinds)

    return build


SWIGLU_PINS = {
    "zero token": Pin("zero token", _swiglu_pin([[0.0] * 6, [1.0, -2.0, 0.5, 3.0, -0.25, 1.5]], 9, ("zero", "normal"))),
    "large negative gate": Pin("large negative gate", _swiglu_pin([[-30.0, -20.0, 40.0, -50.0]], 5, ("large",))),
}


class CausalCase(NamedTuple):
    """A Block case with T ≥ 2, a token t ≥ 1 and ``other``: x with tokens t… redrawn (earlier tokens kept)."""

    case: BlockCase
    t: int
    other: torch.Tensor

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "perturbed from token": self.t}


@st.composite
def causal_cases(draw: st.DrawFn, dtype: torch.dtype) -> CausalCase:
    """A Block case with T ≥ 2 and x perturbed from a drawn token t ≥ 1 on."""
    config = draw(configs(max_dim=32), label="config")
    case = draw(block_cases(dtype, config=config, max_tokens=6), label="case")
    B, T, D = case.x.shape
    if T < 2:
        extra = draw(rows(dtype, D, batch=(B, 1), kinds=("normal",)), label="extra token").x
        case = case._replace(x=torch.cat([case.x, extra], dim=1))
        T = 2
    t = draw(st.integers(1, T - 1), label="t")
    fresh = draw(rows(dtype, D, batch=(B, T - t), kinds=("normal", "mean_shifted", "outlier")), label="new tokens").x
    other = case.x.clone()
    other[:, t:] = fresh
    return CausalCase(case, t, other)


def _gqa_block(dtype: torch.dtype) -> BlockCase:
    """H = 4 query heads on G = 2 kv heads (1 < G < H: h // (H/G) ≠ h mod G for h = 1, 2), T = 4, sharp logits."""
    config = fixed_config(H=4, G=2, K=4, F=24)
    x = torch.from_numpy(np.random.default_rng(7).standard_normal((1, 4, config.dim))).to(dtype)
    return BlockCase(config, x, block_params(config, dtype, seed=11, scale=1.0, logit_scale=4.0), 1.0, 4.0)


BLOCK_PINS = {
    "GQA H=4 G=2": Pin("GQA H=4 G=2", _gqa_block),
}


# ---------------------------------------------------------------------------------------------- memory layout

# Views a real caller hands a kernel (the values are the tensor's; only strides, offset and storage differ):
#   transposed   every stride reversed (the storage is the transposed contiguous tensor: the last dim strided)
#   fused_slice  a slice of a fused buffer (…, 3·D) such as a qkv or gate/up projection: row pitch 3·D, offset D;
#                the rest of the buffer holds NaN, so a kernel that reads outside the view sees NaN
#   expanded     the first row broadcast over the leading dims (stride 0): every row shares one storage row
#   offset       contiguous strides at a storage offset > 0 (a row-slice of a larger buffer, NaN before it)
#   strided      every other row of a buffer twice as long (row pitch 2·D, NaN rows between)
LAYOUTS = ("transposed", "fused_slice", "expanded", "offset", "strided")


def as_layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    """A view of ``layout`` (LAYOUTS) holding x's values (for "expanded": its first row, broadcast), on x's device."""
    D, lead = x.shape[-1], tuple(x.shape[:-1])
    rows = x.reshape(-1, D)
    nan = float("nan")
    if layout == "transposed":
        dims = tuple(range(x.dim() - 1, -1, -1))
        return x.permute(dims).contiguous().permute(dims)
    if layout == "fused_slice":
        buf = torch.full((*lead, 3 * D), nan, dtype=x.dtype, device=x.device)
        buf[..., D : 2 * D] = x
        return buf[..., D : 2 * D]
    if layout == "expanded":
        return rows[:1].clone().reshape(*(1,) * len(lead), D).expand(*lead, D)
    if layout == "offset":
        buf = torch.full((rows.shape[0] + 1, D), nan, dtype=x.dtype, device=x.device)
        buf[1:] = rows
        return buf[1:].view(*lead, D)
    if layout == "strided":
        buf = torch.full((2 * rows.shape[0], D), nan, dtype=x.dtype, device=x.device)
        buf[::2] = rows
        return buf[::2].reshape(*lead, D) if len(lead) <= 1 else buf.view(*lead[:-1], 2 * lead[-1], D)[..., ::2, :]
    raise ValueError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")


def weight_as_layout(w: torch.Tensor, layout: str) -> torch.Tensor:
    """A 1-D or 2-D weight as a view: transposed storage, a slice of a fused (stacked) buffer, or at an offset."""
    if layout == "transposed" and w.dim() == 2:
        return w.t().contiguous().t()
    if layout in ("fused_slice", "offset", "strided"):
        buf = torch.full((2 * w.shape[0], *w.shape[1:]), float("nan"), dtype=w.dtype, device=w.device)
        buf[w.shape[0] :] = w  # the second half of a stacked [other; w] buffer (gate_up fused), offset > 0
        return buf[w.shape[0] :]
    return w


# ---------------------------------------------------------------------------------------------- long sequences

LONG_T = 1024  # the stored corpus checks RoPE against golden at T = 1024 (golden/data/block.json); the laws here
# reach it with bitwise / non-finite criteria that need no golden value


def long_block_case(dtype: torch.dtype, T: int = LONG_T) -> BlockCase:
    """A Block case at a long sequence: H = 2 query heads on G = 1 kv head, K = 8, F = 32, T tokens, seeded
    (narrow on purpose: the attention matrix grows as H·T²)."""
    config = fixed_config(H=2, G=1, K=8, F=32, max_seq_len=T)
    x = torch.from_numpy(np.random.default_rng(T).standard_normal((1, T, config.dim))).to(dtype)
    return BlockCase(config, x, block_params(config, dtype, seed=T + 1), 1.0, 1.0)


def _long_causal(dtype: torch.dtype) -> CausalCase:
    case = long_block_case(dtype)
    t = 700  # past every power-of-two block boundary up to 512
    other = case.x.clone()
    other[:, t:] = torch.from_numpy(np.random.default_rng(3).standard_normal(other[:, t:].shape)).to(dtype)
    return CausalCase(case, t, other)


CAUSAL_PINS = {"T=1024, t=700": Pin("T=1024, t=700", _long_causal)}


# ---------------------------------------------------------------------------------------------- many rows

MANY_ROWS = 160  # 2½ row blocks of 64: a reduction over rows that stops after a block, or drops a partial one, shows


def _many_rows_rmsnorm(dtype: torch.dtype) -> GradCase:
    rng = np.random.default_rng(MANY_ROWS)
    D = 16
    x = torch.from_numpy(rng.standard_normal((2, MANY_ROWS // 2, D)) + 0.5).to(dtype)
    w = torch.from_numpy(rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)).to(dtype)
    case = RMSNormCase(x, w, 1e-6, ("mean_shifted",) * MANY_ROWS, "random_signed")
    return GradCase(case, cotangent(tuple(x.shape), dtype, MANY_ROWS))


def _many_rows_swiglu(dtype: torch.dtype) -> GradCase:
    D, F = 16, 40
    x = torch.from_numpy(np.random.default_rng(MANY_ROWS).standard_normal((MANY_ROWS, D))).to(dtype)
    w = [linear_weight(o, i, dtype, MANY_ROWS + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
    case = SwiGLUCase(x, *w, 1.0, ("normal",) * MANY_ROWS)
    return GradCase(case, cotangent(tuple(x.shape), dtype, MANY_ROWS))


GRAD_PINS = {
    "RMSNorm, 160 rows": Pin("RMSNorm, 160 rows", _many_rows_rmsnorm),
    "SwiGLU, 160 rows": Pin("SwiGLU, 160 rows", _many_rows_swiglu),
}


# ---------------------------------------------------------------------------------------------- model sizes

MODEL_WIDTHS = (2048, 4096, 5120, 8192, 16384)  # Llama-7B / Llama-13B / Llama-65B-class widths, beyond FAST_DIMS
MODEL_HIDDEN = 28672  # the FFN width of Llama-3-70B


def _wide_case(D: int) -> Callable[[torch.dtype], RMSNormCase]:
    """Three rows of width D: non-zero mean, all 0.7 (correlated rounding errors), one outlier; γ of both signs."""

    def build(dtype: torch.dtype) -> RMSNormCase:
        rng = np.random.default_rng(D)
        x = np.stack([rng.standard_normal(D) + 0.5, np.full(D, 0.7), rng.standard_normal(D) / 8])
        x[2, D // 3] = 3.5
        w = rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)
        t = torch.from_numpy
        return RMSNormCase(t(x).to(dtype), t(w).to(dtype), 1e-6, ("mean_shifted", "constant", "outlier"), "random")

    return build


def _wide_row_case_at(D: int) -> Callable[[torch.dtype], RowCase]:
    def build(dtype: torch.dtype) -> RowCase:
        case = _wide_case(D)(dtype)
        return RowCase(case, 0, case.x.flip(0).contiguous())

    return build


def _wide_swiglu_tokens(dtype: torch.dtype) -> TokenCase:
    """Three tokens of D = 16 through F = 28672 hidden units (seeded); token 1 kept, 0 and 2 redrawn.
    (D small on purpose: the regime is F; the bound's cost grows as D·F.)"""
    D, F = 16, MODEL_HIDDEN
    rng = np.random.default_rng(F)
    x = torch.from_numpy(rng.standard_normal((3, D))).to(dtype)
    w = [linear_weight(o, i, dtype, F + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
    other = torch.from_numpy(rng.standard_normal((3, D))).to(dtype)
    other[1] = x[1]
    return TokenCase(SwiGLUCase(x, *w, 1.0, ("normal",) * 3), 1, other)


WIDTH_PINS = {f"D={D}": Pin(f"D={D}, 3 rows", _wide_case(D)) for D in MODEL_WIDTHS}
WIDTH_ROW_PINS = {f"D={D}": Pin(f"D={D}, 3 rows, k=1", _wide_row_case_at(D)) for D in MODEL_WIDTHS}
HIDDEN_PINS = {f"F={MODEL_HIDDEN}": Pin(f"D=16, F={MODEL_HIDDEN}, 3 tokens", _wide_swiglu_tokens)}


def pinned(pins: dict[str, Pin]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@example(data=pin)`` for every pin of ``pins``, in order."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for pin in reversed(list(pins.values())):
            func = example(data=pin)(func)
        return func

    return decorate


# ---------------------------------------------------------------------------------------------- sensitive cases
# (issue 18: sharp verdicts) Cases whose output depends on every stage, drawn with independent random signs so that
# the probabilistic tier of the bounds judges them (``bounds``' drawn inputs): attention far from uniform (q/k scale up
# to 2³: the largest probability of a row is large, so a wrong score or a wrong probability moves the output), RoPE
# angles of several radians at every position (rope_theta 10 among the bases), every row "normal" (random signs and
# magnitudes) but one case in four with a structured row (constant, same sign, an outlier, mixed scales: the
# deterministic tier's cases).


class SharpBlockCase(NamedTuple):
    """A Block case and the regime of each of its B·T rows."""

    case: BlockCase
    kinds: tuple[str, ...]

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "rows": _summarise_kinds(self.kinds)}


@st.composite
def sharp_block_cases(draw: st.DrawFn, dtype: torch.dtype, *, max_dim: int = 32, max_tokens: int = 8) -> SharpBlockCase:
    """A config (H ∈ {1, 2, 4}, any G, K ∈ {4, 6, 8, 16}: D ≥ 4, so the rows' sums of squares have a model), x
    (B, T, D) with 2 ≤ T ≤ max_tokens, random weights of scale 2^-2 … 2^1 and q/k scale 2^0 … 2^3; one case in eight
    with structured rows."""
    H = draw(st.sampled_from((1, 2, 4)), label="n_heads")
    G = draw(st.sampled_from([g for g in (1, 2, 4) if H % g == 0]), label="n_kv_heads")
    K = draw(st.sampled_from([k for k in (4, 6, 8, 16) if H * k <= max_dim]), label="head_dim")
    D = H * K
    config = ModelConfig(
        dim=D, n_layers=1, n_heads=H, n_kv_heads=G, vocab_size=8, max_seq_len=max_tokens,
        norm_eps=draw(st.sampled_from((1e-6, 1e-5)), label="norm_eps"),
        rope_theta=draw(st.sampled_from((10000.0, 500000.0, 10.0)), label="rope_theta"),
        ffn_dim=draw(st.integers(max(1, D // 2), 3 * D), label="ffn_dim"),
    )  # fmt: skip
    B = draw(st.integers(1, 2), label="B")
    T = draw(st.integers(2, max_tokens), label="T")
    if draw(st.integers(0, 7), label="structured row?") == 0:
        kinds = ("normal", "mean_shifted", "outlier", "constant", "tiny_and_huge")
        drawn = draw(rows(dtype, config.dim, batch=(B, T), kinds=kinds, scale_exps=(-4, 4)), label="x")
        xt, row_kinds = drawn.x, drawn.kinds
    else:  # random rows from a drawn seed (element-wise draws start from simple, repeated values)
        rng = np.random.default_rng(draw(st.integers(0, 2**64 - 1), label="x seed"))
        xt = torch.from_numpy(rng.standard_normal((B, T, config.dim)) * 2.0 ** rng.integers(-3, 4)).to(dtype)
        row_kinds = ("normal",) * (B * T)
    xt = xt.clamp(-64, 64) if dtype in (torch.float16, torch.bfloat16) else xt
    scale = 2.0 ** draw(st.integers(-2, 1), label="weight scale exponent")
    logit_scale = 2.0 ** draw(st.integers(0, 3), label="q/k scale exponent")
    seed = draw(st.integers(0, 2**63 - 1), label="weight seed")
    case = BlockCase(config, xt, block_params(config, dtype, seed, scale, logit_scale), scale, logit_scale)
    return SharpBlockCase(case, row_kinds)


SHARP_BLOCK_PINS = {
    "GQA H=4 G=2": Pin("GQA H=4 G=2", lambda dt: SharpBlockCase(_gqa_block(dt), ("normal",) * 4)),  # x ~ N(0, 1)
}


def long_positions(T: int, n: int = 24, last: int = 8) -> np.ndarray:
    """A sample of query positions of a long sequence, judged against golden: the last ``last`` (every key before
    them), each power of two and its neighbours (block boundaries of real kernels), and ``n`` evenly spaced."""
    if T <= n + last:
        return np.arange(T)
    powers = [p + d for p in (2**k for k in range(1, T.bit_length())) for d in (-1, 0) if 0 <= p + d < T]
    return np.unique(np.concatenate([np.arange(T - last, T), powers, np.linspace(0, T - 1, n).astype(int)]))


# ---------------------------------------------------------------------------------------------- call protocols

# The cases the value laws run once under every call protocol (``protocols.honoured(…, pin=…)``): small (the pins
# run in every profile, once per protocol and dtype) with several rows, a non-zero mean and γ of both signs, so a
# protocol that hands the module stale state, another instance's weights or a wrong cotangent moves every value.


def _protocol_rmsnorm(dtype: torch.dtype) -> RMSNormCase:
    rng = np.random.default_rng(19)
    x = torch.from_numpy(rng.standard_normal((2, 3, 48)) + 0.5).to(dtype)
    w = torch.from_numpy(rng.uniform(0.5, 1.5, 48) * rng.choice((-1.0, 1.0), 48)).to(dtype)
    return RMSNormCase(x, w, 1e-6, ("mean_shifted",) * 6, "random_signed")


def _protocol_rmsnorm_grads(dtype: torch.dtype) -> GradCase:
    case = _protocol_rmsnorm(dtype)
    return GradCase(case, cotangent(tuple(case.x.shape), dtype, 20))


def _protocol_swiglu(dtype: torch.dtype) -> SwiGLUCase:
    D, F = 8, 12
    x = torch.from_numpy(np.random.default_rng(21).standard_normal((2, 3, D)) + 0.25).to(dtype)
    w = [linear_weight(o, i, dtype, 22 + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
    return SwiGLUCase(x, *w, 1.0, ("normal",) * 6)


def _protocol_swiglu_grads(dtype: torch.dtype) -> GradCase:
    case = _protocol_swiglu(dtype)
    return GradCase(case, cotangent(tuple(case.x.shape), dtype, 25))


def _protocol_block(dtype: torch.dtype) -> BlockCase:
    config = fixed_config(H=2, G=1, K=4, F=12)
    x = torch.from_numpy(np.random.default_rng(26).standard_normal((2, 3, config.dim)) + 0.25).to(dtype)
    return BlockCase(config, x, block_params(config, dtype, seed=27, scale=1.0, logit_scale=2.0), 1.0, 2.0)


PROTOCOL_PINS = {
    "RMSNorm": Pin("RMSNorm (2, 3, 48), every protocol", _protocol_rmsnorm),
    "RMSNorm gradients": Pin("RMSNorm (2, 3, 48), every protocol", _protocol_rmsnorm_grads),
    "SwiGLU": Pin("SwiGLU (2, 3, 8), F=12, every protocol", _protocol_swiglu),
    "SwiGLU gradients": Pin("SwiGLU (2, 3, 8), F=12, every protocol", _protocol_swiglu_grads),
    "Block": Pin("Block (2, 3, 8), H=2 G=1, every protocol", _protocol_block),
}


# ---------------------------------------------------------------------------------------------- code-path sizes

# Sizes where a kernel switches code path (laws/paths.py): launch grids limited to 65,535 programs along an axis
# (CUDA's gridDim.y and .z), several rows per program for narrow rows, a tail block past a power of two, several
# attention programs per (batch, head). Each case is enumerated (no drawing: the sizes are the point), seeded, and
# judged on a sample of its rows (``sampled_rows``): the oracle is per row, so a few dozen rows cost what a
# drawn case costs, whatever the row count.
GRID_LIMIT = 65_535


class PathCase(NamedTuple):
    """One code-path size: its name, x (…, D) and the component's weights (a state dict; RMSNorm's eps in ``eps``)."""

    name: str
    x: torch.Tensor
    params: dict[str, torch.Tensor]
    eps: float = 1e-6
    config: ModelConfig | None = None

    def describe(self) -> dict[str, object]:
        return {"case": self.name, "shape": tuple(self.x.shape), "D": self.x.shape[-1]}


def sampled_rows(n: int, seed: int, extra: int = 8) -> np.ndarray:
    """Row indices of n rows to judge: the first and last, both sides of every power-of-two boundary below n (where
    a grid, a block of rows or an index type ends), and ``extra`` random ones — ascending, unique."""
    edges = [r for k in range(max(1, n).bit_length()) for r in (2**k - 1, 2**k)]
    rng = np.random.default_rng(seed)
    picks = [0, n - 1, *edges, *rng.integers(0, n, extra).tolist()]
    return np.unique([r for r in picks if 0 <= r < n])


@functools.lru_cache(maxsize=8)
def _normal(shape: tuple[int, ...], seed: int, mean: float) -> np.ndarray:
    values = np.random.default_rng(seed).standard_normal(shape) + mean
    values.flags.writeable = False  # shared by the dtypes of one process: never modified
    return values


def _values(shape: tuple[int, ...], dtype: torch.dtype, seed: int, mean: float = 0.5) -> torch.Tensor:
    """N(mean, 1) values of ``shape``, exact in ``dtype`` (generated once per process for every dtype)."""
    return torch.tensor(_normal(shape, seed, mean), dtype=torch.float64).to(dtype)


def _path_rmsnorm(name: str, N: int, D: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        rng = np.random.default_rng(N + D)
        w = torch.from_numpy(rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)).to(dtype)
        return PathCase(name, _values((N, D), dtype, N * D), {"weight": w})

    return build


def _path_swiglu(name: str, N: int, D: int, F: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        w = [linear_weight(o, i, dtype, N + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
        x = _values((N, D), dtype, N * D, mean=0.25)
        return PathCase(name, x, dict(zip(("w_gate.weight", "w_up.weight", "w_down.weight"), w, strict=True)))

    return build


def _path_block(name: str, B: int, T: int, H: int, K: int, F: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        config = fixed_config(H=H, G=1, K=K, F=F, max_seq_len=max(16, T))
        x = _values((B, T, config.dim), dtype, B * T, mean=0.25)
        return PathCase(name, x, block_params(config, dtype, seed=B + T, logit_scale=2.0), config=config)

    return build


PATHS: dict[str, dict[str, Callable[[torch.dtype], PathCase]]] = {
    "RMSNorm": {
        "2^16 + 1 rows, D = 8": _path_rmsnorm("2^16 + 1 rows, D = 8 (past a 65,535-program grid)", 2**16 + 1, 8),
        "2^17 + 3 rows, D = 4": _path_rmsnorm("2^17 + 3 rows, D = 4 (past 65,535 programs of 2 rows)", 2**17 + 3, 4),
        "4,099 rows, D = 64": _path_rmsnorm("4,099 rows, D = 64 (several narrow rows per program)", 4099, 64),
        "4,099 rows, D = 256": _path_rmsnorm("4,099 rows, D = 256 (several rows per program)", 4099, 256),
        "D = 2^9 + 1": _path_rmsnorm("5 rows, D = 513 = 2^9 + 1 (a one-element tail block)", 5, 513),
        "D = 2^12 + 1": _path_rmsnorm("5 rows, D = 4097 = 2^12 + 1 (a one-element tail block)", 5, 4097),
        "D = 3·2^9": _path_rmsnorm("5 rows, D = 1536 = 3·2^9 (not a power of two)", 5, 1536),
        "D = 2^11 − 1": _path_rmsnorm("5 rows, D = 2047 = 2^11 − 1 (one short of a power of two)", 5, 2047),
    },
    "SwiGLU": {
        "2^16 + 1 tokens": _path_swiglu("2^16 + 1 tokens, D = F = 4 (past a 65,535-program grid)", 2**16 + 1, 4, 4),
        "2^17 + 3 tokens": _path_swiglu(
            "2^17 + 3 tokens, D = 2, F = 4 (past 65,535 programs of 2 rows)", 2**17 + 3, 2, 4
        ),
        "4,099 tokens": _path_swiglu("4,099 tokens, D = 32, F = 86 (many narrow rows)", 4099, 32, 86),
        "D, F = 2^k + 1": _path_swiglu("3 tokens, D = 129, F = 257 (2^k + 1: one-element tail blocks)", 3, 129, 257),
    },
    "Block": {
        "B·H past 2^16": _path_block(
            "B = 32,769, H = 2: 65,538 (batch, head) programs, 65,538 rows", 32769, 2, 2, 4, 8
        ),
        "K, F = 2^k + 2, 2^k + 1": _path_block("B = 3, T = 5, K = 34 = 2^5 + 2, F = 65 = 2^6 + 1", 3, 5, 2, 34, 65),
        "B·H = 4,098": _path_block(
            "B = 2,049, H = 2: 4,098 (batch, head) programs (the step before 2^16)", 2049, 2, 2, 4, 8
        ),
    },
}


# ---------------------------------------------------------------------------------------------- extreme logits

EXTREME_LOGIT = 4096.0  # |q·k/√K|: exp overflows fp32 past 88.7, so a softmax that does not subtract the row max
# returns inf/inf = NaN (all positive) or 0/0 = NaN (all negative); the golden softmax is exact at any scale


def _extreme_logits(sign: float) -> Callable[[torch.dtype], BlockCase]:
    """All attention logits ≈ sign·4096, nearly equal (they differ by < 2: the softmax is far from one-hot and far
    from exactly uniform). x_t = [1 … 1, ±1 … ±1] (the sign alternating with t; every row of RMS 1, γ = 1), so
    q and k read only the first half, constant in t; with rope_theta = 10⁶ the pair (3, 7) of K = 8 barely
    rotates (≤ 10⁻⁴ rad over T = 4): its q₃k₃/√K = ±4096 is the score's bulk; the pair (0, 4), which rotates by
    one radian per position, reads the alternating half: ±1.4, so the scores differ. v reads both halves."""

    def build(dtype: torch.dtype) -> BlockCase:
        config = dataclasses.replace(fixed_config(H=2, G=1, K=8, F=16), rope_theta=1e6)
        D, K = config.dim, config.head_dim
        params = block_params(config, dtype, seed=41, gamma="ones")
        wq, wk = torch.zeros(config.n_heads * K, D), torch.zeros(K, D)
        half = D // 2
        for h in range(config.n_heads):
            wq[h * K + 3, :half] = 64.0 / half  # q₃ = 64
            wq[h * K + 0, half:] = 2.0 / half  # q₀ = ±2, alternating with t
        wk[3, :half] = sign * 181.0 / half  # k₃ = ±181: q₃k₃/√8 = ±4096.3
        wk[0, half:] = 2.0 / half
        params = {**params, "attn.wq.weight": wq.to(dtype), "attn.wk.weight": wk.to(dtype)}
        T = 4
        x = torch.ones(2, T, D, dtype=torch.float64)
        x[:, 1::2, half:] = -1.0
        x[1] = x[1].flip(0)
        return BlockCase(config, x.to(dtype), params, 1.0, EXTREME_LOGIT)

    return build


LOGIT_PINS = {
    "logits ≈ −4096": Pin("every attention logit ≈ −4096", _extreme_logits(-1.0)),
    "logits ≈ +4096": Pin("every attention logit ≈ +4096", _extreme_logits(1.0)),
}


# ---------------------------------------------------------------------------------------------- 16-bit backward

BACKWARD_T = 513  # past 512: the attention backward over a realistic sequence, logits of realistic size


def _realistic_backward(dtype: torch.dtype) -> BlockCase:
    """T = 513 tokens, H = 2 on G = 1, K = 8, F = 32, q/k weights of scale 2.5: logits q·k/√K ~ N(0, 6²), the
    largest of each row ≈ 15–20 (a trained Llama's are of that order; exp(11.1) already overflows fp16)."""
    config = fixed_config(H=2, G=1, K=8, F=32, max_seq_len=BACKWARD_T)
    x = torch.from_numpy(np.random.default_rng(BACKWARD_T).standard_normal((1, BACKWARD_T, config.dim))).to(dtype)
    return BlockCase(config, x, block_params(config, dtype, seed=43, scale=0.5, logit_scale=2.5), 0.5, 2.5)


BACKWARD_PINS = {f"T={BACKWARD_T}": Pin(f"T = {BACKWARD_T}, logits up to ≈ 20", _realistic_backward)}


# ---------------------------------------------------------------------------------------------- AddRMSNorm
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
            "rows": _summarise_kinds(self.kinds),
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


def _add_case(x: np.ndarray, r: np.ndarray, kinds: tuple[str, ...], branch: str, eps: float = 1e-6):
    def build(dtype: torch.dtype) -> AddRMSNormCase:
        xt, rt = (torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype) for v in (x, r))
        D = xt.shape[-1]
        w = torch.from_numpy(np.random.default_rng(D).uniform(0.5, 1.5, D) * np.where(np.arange(D) % 3, 1.0, -1.0))
        return AddRMSNormCase(xt, rt, w.to(dtype), eps, kinds, branch, "random_signed")

    return build


def _add_wide(dtype: torch.dtype, D: int = 1024) -> AddRMSNormCase:
    """Two full-mantissa rows: a small branch (std 2^-5) on a stream of mean 0.5, and x = −r + 2^-8 (cancelling)."""
    rng = np.random.default_rng(D)
    r = rng.standard_normal((2, D)) + 0.5
    x = np.stack([rng.standard_normal(D) / 32, -r[1] + rng.standard_normal(D) / 256])
    return _add_case(x, r, ("mean_shifted", "mean_shifted"), "small, cancelling")(dtype)


def _add_many_rows(dtype: torch.dtype) -> AddGradCase:
    rng = np.random.default_rng(MANY_ROWS)
    D = 16
    r, x = rng.standard_normal((2, MANY_ROWS // 2, D)) + 0.5, rng.standard_normal((2, MANY_ROWS // 2, D)) / 4
    case = _add_case(x, r, ("mean_shifted",) * MANY_ROWS, "comparable")(dtype)
    return AddGradCase(case, *(cotangent((2, MANY_ROWS // 2, D), dtype, MANY_ROWS + k) for k in range(2)))


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


def _add_protocols(dtype: torch.dtype) -> AddRMSNormCase:
    """The case the AddRMSNorm laws run under every call protocol: (2, 3, 48), a branch of a quarter of the stream."""
    rng = np.random.default_rng(27)
    r, x = rng.standard_normal((2, 3, 48)) + 0.5, rng.standard_normal((2, 3, 48)) / 4
    return _add_case(x, r, ("mean_shifted",) * 6, "comparable")(dtype)


def _add_protocols_grads(dtype: torch.dtype) -> AddGradCase:
    case = _add_protocols(dtype)
    return AddGradCase(case, *(cotangent(tuple(case.x.shape), dtype, 28 + k) for k in range(2)))


ADD_RMSNORM_PINS = {
    "every protocol": Pin("AddRMSNorm (2, 3, 48), every protocol", _add_protocols),
    "every protocol, gradients": Pin("AddRMSNorm (2, 3, 48), every protocol", _add_protocols_grads),
    "wide rows, D=1024": Pin("wide rows, D=1024", _add_wide),
    "wide rows, D=4096": Pin("wide rows, D=4096", lambda dtype: _add_wide(dtype, 4096)),
    "every corner": Pin(
        "every corner",
        lambda dtype: _add_case(
            [[a for a, _ in sum_corners(dtype)]], [[b for _, b in sum_corners(dtype)]], ("corners",), "corners"
        )(dtype),
    ),
    "zero branch": Pin(
        "zero branch",
        _add_case(
            np.zeros((2, 8)), [[1.0, -2.0, 3.0, 0.5, 0.25, -1.0, 2.0, 1.5], [0.0] * 8], ("normal", "zero"), "zero"
        ),
    ),
    "ties and signed zeros": Pin(  # 1 + 2^-8 and 1 + 3·2^-8 are bf16 ties; 2^-7 − 2^-7 = +0, −0 + −0 = −0
        "ties and signed zeros",
        _add_case(
            [[2.0**-8, 3 * 2.0**-8, 2.0**-7, -0.0, 1.0, -(2.0**-20)]],
            [[1.0, 1.0, -(2.0**-7), -0.0, 2.0**13, 1.0]],
            ("normal",),
            "small",
        ),
    ),
    "AddRMSNorm, 160 rows": Pin("AddRMSNorm, 160 rows", _add_many_rows),
}


def _path_add_rmsnorm(name: str, N: int, D: int) -> Callable[[torch.dtype], PathCase]:
    """A stream of N rows of width D and a branch of a quarter of its size; the residual travels in ``params``."""

    def build(dtype: torch.dtype) -> PathCase:
        rng = np.random.default_rng(N + D + 1)
        w = torch.from_numpy(rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)).to(dtype)
        r = _values((N, D), dtype, N * D)
        x = (torch.from_numpy(np.random.default_rng(N * D + 1).standard_normal((N, D))) / 4).to(dtype)
        return PathCase(name, x, {"weight": w, "residual": r})

    return build


PATHS["AddRMSNorm"] = {
    "2^16 + 1 rows, D = 8": _path_add_rmsnorm("2^16 + 1 rows, D = 8 (past a 65,535-program grid)", 2**16 + 1, 8),
    "4,099 rows, D = 64": _path_add_rmsnorm("4,099 rows, D = 64 (several narrow rows per program)", 4099, 64),
    "D = 2^12 + 1": _path_add_rmsnorm("5 rows, D = 4097 = 2^12 + 1 (a one-element tail block)", 5, 4097),
}
