"""The documented domain limit of RMSNorm: rows whose sum of squares overflows the compute dtype.

y = x/√(mean(x²)+ε)·γ is finite and of order |γ| for every finite x, but every accepted way of computing it
forms Σx² (or mean(x²)) in the compute dtype c — fp32 for fp16/bf16/fp32 input, fp64 for fp64, or the one the
implementation declares (``bounds.compute_dtype``, the one policy) — and that sum
overflows once Σx²·(1 + D·u_c) > max_c: for a row of equal entries, |x| > √(max_c/D) ≈ 1.8·10¹⁹/√D in
fp32/bf16 and 1.3·10¹⁵⁴/√D in fp64. Beyond it torch's own ``F.rms_norm`` returns 0 (a row of 1e20 in fp32);
a kernel that pre-scales the row by its max would be exact. Neither is wrong: the row is outside the domain
the contract's numerics policy can serve, and ``bounds.rmsnorm`` marks it not judged (``Bound.overflow``).

This law makes the limit explicit instead of silent: up to the threshold (Σx² at 2^-1 … 2^-8 of it) the
result must match golden within the bound; beyond it (Σx² at 2 … 2^8 times it, x itself finite) what the
implementation returns is *recorded* — rows returned as zeros, as non-finite values, or within 4·u_c relative
of golden — as a measurement, never judged. fp16 input cannot reach the threshold (65504²·D ≪ max_fp32): there
rows at the top of fp16's range (|x| up to 65504, x² far past fp16's range) must match golden.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

import golden
from golden.formats import fmt
from properties.library import protocols
from properties.library import strategies as S
from properties.library.assertions import as_f64, assert_matches_golden
from properties.library.context import current, measure
from properties.library.harness import note, rmsnorm_forward
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

AXIS = "domain limits: inputs up to and past the compute dtype's range"  # its column in the matrix
DType = torch.dtype
Data = st.DataObject

BELOW, BEYOND = (-1, -8), (1, 8)  # log2 of Σx² / threshold: inside the domain, outside it


def threshold(D: int, dtype: DType) -> float:
    """The largest Σx² inside the domain: ``bounds.rmsnorm``'s own overflow criterion, in the compute dtype the
    implementation declares (else the contract's: fp32, fp64 for fp64)."""
    return bounds.sum_of_squares_limit(D, bounds.compute_dtype(dtype))


def reachable(D: int, dtype: DType) -> bool:
    """Can a row of D finite values of ``dtype`` reach the threshold? Not fp16's in fp32 (65504²·D ≪ max_fp32)."""
    return math.sqrt(D) * fmt(dtype).max > math.sqrt(threshold(D, dtype))


class DomainCase(NamedTuple):
    """RMSNorm rows scaled to Σx² = 2^k·threshold (k < 0 inside the domain, k > 0 beyond it; fp16: |x| → 65504)."""

    case: S.RMSNormCase
    log2_ratio: tuple[int, ...]

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "log2(Σx²/threshold)": list(self.log2_ratio)}


def _scaled(rows: np.ndarray, ks: list[int], dtype: DType) -> np.ndarray:
    D = rows.shape[-1]
    if not reachable(D, dtype):  # fp16: the top of its range, max |x| = 65504·2^-k/8 for k ∈ 1…8
        return rows / np.abs(rows).max(axis=-1, keepdims=True) * fmt(dtype).max * 2.0 ** (-np.abs(ks)[:, None] / 8)
    root = np.sqrt(threshold(D, dtype)) * 2.0 ** (np.array(ks, dtype=np.float64)[:, None] / 2)  # √ first: fp64
    return rows * (root / np.sqrt((rows**2).sum(axis=-1, keepdims=True)))


@st.composite
def domain_cases(draw: st.DrawFn, dtype: DType) -> DomainCase:
    """2–4 rows of a drawn D (non-zero mean, or constant), each at Σx² = 2^k·threshold, k ∈ ±(1…8), γ drawn."""
    D = draw(S.dims(max_dim=769), label="D")
    ks = draw(st.lists(st.integers(*BELOW[::-1]) | st.integers(*BEYOND), min_size=2, max_size=4), label="log2 ratios")
    rng = np.random.default_rng(draw(st.integers(0, 2**32), label="row seed"))
    rows = rng.standard_normal((len(ks), D)) + 0.5
    if draw(st.booleans(), label="constant rows?"):
        rows = np.ones_like(rows)
    ks = list(ks) if reachable(D, dtype) else [-abs(k) for k in ks]  # fp16: every row inside the domain
    x = torch.from_numpy(_scaled(rows, ks, dtype)).to(dtype)
    g = draw(S.gammas(D, dtype), label="gamma")
    return DomainCase(S.RMSNormCase(x, g.weight, 1e-6, ("large",) * len(ks), g.kind), tuple(ks))


def _pinned(dtype: DType) -> DomainCase:
    """Rows of 1e20 (fp32: F.rms_norm returns 0) next to rows just inside the threshold, D = 64."""
    D = 64
    ks = [-1, -8, 1, 8] if reachable(D, dtype) else [-1, -8, -3, -4]
    x = _scaled(np.ones((len(ks), D)), ks, dtype)
    if dtype in (torch.float32, torch.bfloat16):
        x = np.vstack([x, np.full((1, D), 1e20)])
        ks = [*ks, int(np.log2(D * 1e40 / threshold(D, dtype)))]
    w = torch.linspace(-1.5, 1.75, D, dtype=torch.float64).to(dtype)
    return DomainCase(S.RMSNormCase(torch.from_numpy(x).to(dtype), w, 1e-6, ("large",) * len(ks), "signed"), tuple(ks))


DOMAIN_PINS = {"equal rows at the threshold, 1e20": S.Pin("equal rows at the threshold, 1e20", _pinned)}


def _tally(outside: np.ndarray, y: np.ndarray, gold: np.ndarray, u: float) -> None:
    """Add the behaviour of the rows beyond the threshold to the run's measurements (reported, not judged)."""
    ctx = current()
    if ctx is None or not outside.any():
        return
    seen = dict(ctx.recorder.measurements.get("beyond the overflow threshold (rows)", {}))
    for row, g in zip(y[outside], gold[outside], strict=True):
        if not np.isfinite(row).all():
            kind = "non-finite"
        elif not row.any():
            kind = "zeros (as F.rms_norm)"
        elif np.all(np.abs(row - g) <= 4 * u * np.abs(g) + 1e-300):
            kind = "correct (within 4·u_c)"
        else:
            kind = "other"
        seen[kind] = seen.get(kind, 0) + 1
    measure("beyond the overflow threshold (rows)", seen)


def _judged_rows(dc: Any, dtype: DType) -> tuple[Any, np.ndarray]:
    """bounds.rmsnorm of the case and the rows beyond its domain (where Σx² overflows the compute dtype)."""
    c = dc.case
    with np.errstate(over="ignore", invalid="ignore"):  # Σx² overflows float64 itself beyond the fp64 threshold
        b = bounds.rmsnorm(c.x, c.weight, c.eps, dtype)
    outside = np.asarray(b.overflow).any(axis=-1) if b.overflow is not None else np.zeros(len(dc.log2_ratio), bool)
    inside_ks = [k for k, o in zip(dc.log2_ratio, outside, strict=True) if not o]
    if inside_ks and max(inside_ks) > 0:  # the bound's own criterion must agree with the construction
        raise RuntimeError(f"suite: a row at 2^{max(inside_ks)}·threshold is judged by bounds.rmsnorm")
    return b, outside


@law("RMSNorm", cost=4)
@given(data=st.data())
@example(data=DOMAIN_PINS["equal rows at the threshold, 1e20"])
@protocols.honoured(protocols.FORWARD)  # drawn only: the law's own rows are the regime
def rmsnorm_is_exact_up_to_the_overflow_threshold(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Rows up to the domain limit Σx²·(1 + D·u_c) ≤ max_c (|x| ≤ √(max_c/D) for equal entries; c = fp32, fp64
    for fp64) match golden within bounds.rmsnorm; beyond it the result is recorded (zeros, non-finite, correct),
    not judged — a documented domain limit, never a silent exclusion. fp16 never reaches it: up to |x| = 65504."""
    dc = data.draw(domain_cases(dtype), label="case")
    note(dc)
    c = dc.case
    y = rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)
    exact = golden.rmsnorm(c.x, c.weight, c.eps)
    b, outside = _judged_rows(dc, dtype)
    assert_matches_golden(y, exact, b, what="y up to the overflow threshold", record=False)
    rows = len(outside), -1
    _tally(outside, as_f64(y).reshape(rows), exact.float64().reshape(rows), fmt(bounds.compute_dtype(dtype)).u)
