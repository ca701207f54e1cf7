"""Dtype facts, ULP distance, extended relative error and summaries.

Notation: a float format has precision p (significand bits with the hidden one) and minimum normal
exponent e_min; its unit roundoff is u = 2^-p (fp64 2^-53, fp32 2^-24, fp16 2^-11, bf16 2^-8).

* ``ulp(v, dtype)`` = 2^(max(⌊log2|v|⌋, e_min) − p + 1): the spacing of dtype in the binade of v (the
  gap above |v|; at an exact power of two this is the larger of the two gaps, as numpy's ``spacing``), fixed
  at the subnormal spacing 2^(e_min − p + 1) below the normal range (also for v = 0). The exponent comes from
  ``frexp`` — exact, unlike ``log2`` which rounds 2^k·(1 − 2^-53) up to k. For a golden value hi + lo the
  exponent is that of the exact sum (hi = 2^k with lo < 0 lies in the binade below).
* ``ulp_error(actual, golden)`` = |actual − golden| / ulp_dtype(golden), dtype = actual's dtype. A correctly
  rounded result has error ≤ 0.5; a faithful one < 1. Non-finite values: NaN where NaN is due and the same
  infinity where the golden value overflows the dtype count as 0; any other mismatch is +inf (a NaN is never
  agreement with a finite exact answer). ``abs_error`` is the same distance before the division.
* ``rel_error(actual, golden)``: scipy ``xsref``'s extended relative error — |actual − golden| / |golden|,
  with |golden| replaced by the smallest subnormal when golden = 0, infinities compared with the mythical
  nextafter(max) = max + ulp(max)/2, NaN vs NaN = 0 and NaN vs number = inf.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from golden.dd import DD
from golden.formats import FORMATS, fmt

__all__ = [
    "DTYPES",
    "abs_error",
    "as_f64",
    "golden_parts",
    "rel_error",
    "summarize",
    "ulp",
    "ulp_error",
]

DTYPES = tuple(f.dtype for f in FORMATS)


def as_f64(values: Any) -> np.ndarray:
    """The exact float64 values of a tensor (any device; every fp32/fp16/bf16 value is a float64) or an array, as a
    numpy array on the CPU: the one tensor → float64 conversion of the suite (no copy for a float64 array)."""
    if isinstance(values, torch.Tensor):
        return values.detach().to("cpu", torch.float64).numpy()
    return np.asarray(values, dtype=np.float64)


def golden_parts(golden: Any) -> DD:
    """The parts hi + lo of a golden value in the one holder of them, ``golden.dd.DD``: a Golden's (or a DD's), else
    the exact float64 values of a tensor or array with lo = 0. Unpacks as ``hi, lo = golden_parts(g)``."""
    if hasattr(golden, "hi"):
        hi = np.asarray(golden.hi, dtype=np.float64)
        lo = getattr(golden, "lo", None)
        return DD(hi, np.zeros_like(hi) if lo is None else np.asarray(lo, dtype=np.float64))
    hi = as_f64(golden)
    return DD(hi, np.zeros_like(hi))


def _actual(actual: Any) -> tuple[np.ndarray, torch.dtype | None]:
    if isinstance(actual, torch.Tensor):
        return as_f64(actual), actual.dtype
    a = np.asarray(actual)
    dt = fmt(a.dtype).dtype if a.dtype in (np.float64, np.float32, np.float16) else None
    return a.astype(np.float64), dt


def _exponent(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """⌊log2|hi + lo|⌋ exactly (hi normalised: |lo| ≤ ulp(hi)/2), via frexp; −∞ → very small for 0."""
    m, e = np.frexp(hi)
    e = e - 1
    # hi = ±2^e exactly and lo pulls the value into the binade below
    below = (np.abs(m) == 0.5) & (lo != 0) & (np.sign(lo) != np.sign(hi))
    return np.where(hi == 0, -100000, e - below.astype(e.dtype))


def ulp(values: Any, dtype: Any) -> np.ndarray:
    """Spacing of dtype at each value: 2^(max(⌊log2|v|⌋, e_min) − p + 1) (float64 array; inf/NaN → NaN).

    ``values`` may be a float64 array/tensor or a Golden (then the exponent of hi + lo is used).
    """
    f = fmt(dtype)
    p, emin = f.p, f.emin
    hi, lo = golden_parts(values)
    with np.errstate(all="ignore"):
        e = np.maximum(_exponent(hi, lo), emin)
        out = np.ldexp(1.0, (e - p + 1).astype(np.int64))
    return np.where(np.isfinite(hi), out, np.nan)


def abs_error(actual: Any, golden: Any, dtype: Any = None) -> np.ndarray:
    """|actual − golden| (golden: hi + lo, the difference formed with TwoSum so lo is not lost), float64 array.

    Non-finite values follow the golden value, which is the law's exact answer: where golden is NaN only NaN
    agrees (error 0); where golden is ±inf or overflows dtype (rounds to ±inf) only the same infinity agrees;
    every other non-finite value on either side — a NaN or ∞ output where the exact answer is finite — is an
    error of infinite size.
    """
    a, adt = _actual(actual)
    dt = fmt(dtype).dtype if dtype is not None else (adt or torch.float64)
    hi, lo = golden_parts(golden)
    a, hi, lo = np.broadcast_arrays(a, hi, lo)
    with np.errstate(all="ignore"):
        s = a - hi
        bb = s - a
        e = (a - (s - bb)) + (-hi - bb)  # TwoSum(a, −hi): a − hi = s + e exactly
        diff = np.abs(s + (e - lo))
        g_nan = np.isnan(hi) | np.isnan(lo)
        g_inf = (np.isinf(hi) | (np.abs(hi + lo) >= _overflow_threshold(dt))) & ~g_nan
        agree = np.where(g_nan, np.isnan(a), g_inf & np.isinf(a) & (np.sign(a) == np.sign(hi)))
        special = g_nan | g_inf | ~np.isfinite(a)
        return np.where(special, np.where(agree, 0.0, np.inf), diff)


def ulp_error(actual: Any, golden: Any, dtype: Any = None) -> np.ndarray:
    """|actual − golden| in ULPs of dtype at the golden value (dtype: actual's dtype unless given).

    actual: tensor (any device) or array; golden: :class:`golden.Golden` (hi + lo), tensor or array.
    Returns a float64 array of the broadcast shape: :func:`abs_error` / :func:`ulp` — 0 where a non-finite
    golden value is matched (NaN↔NaN, the same infinity where golden overflows dtype), +inf for any other
    non-finite value.
    """
    a, adt = _actual(actual)
    dt = fmt(dtype).dtype if dtype is not None else (adt or torch.float64)
    diff = abs_error(a, golden, dt)
    hi, lo = golden_parts(golden)
    with np.errstate(all="ignore"):
        spacing = np.broadcast_to(ulp(DD(hi, lo), dt), diff.shape)
        return np.where(np.isfinite(diff) & (diff > 0), diff / spacing, diff)


def _overflow_threshold(dt: torch.dtype) -> float:
    """max + ulp(max)/2: the smallest magnitude that rounds to ±inf (RNE)."""
    return fmt(dt).overflow_threshold


def rel_error(actual: Any, golden: Any, dtype: Any = None) -> np.ndarray:
    """Extended relative error (scipy/xsref): |actual − golden| / |golden|, defined for 0, NaN and ±inf.

    golden = 0 → divide by the smallest subnormal of dtype (0 if actual is 0 too); golden = ±inf → the
    absolute error is measured to max + ulp(max)/2 and divided by max; NaN vs NaN → 0, NaN vs number → inf;
    actual = ±inf vs a finite golden → measured from ±(max + ulp(max)/2) (early overflow is not infinitely wrong).
    """
    a, adt = _actual(actual)
    dt = fmt(dtype).dtype if dtype is not None else (adt or torch.float64)
    hi, lo = golden_parts(golden)
    g = hi + lo
    a, g = np.broadcast_arrays(a, g)
    mx = fmt(dt).max
    p = fmt(dt).p
    beyond = _overflow_threshold(dt)  # the "mythical" nextafter(max) = max + ulp(max)/2
    tiny = float(torch.finfo(dt).smallest_normal) * 2.0 ** -(p - 1)
    with np.errstate(all="ignore"):
        a_eff = np.where(np.isinf(a), np.sign(a) * beyond, a)
        g_eff = np.where(np.isinf(g), np.sign(g) * beyond, g)
        abs_err = np.abs(a_eff - g_eff)
        abs_err = np.where(a == g, 0.0, abs_err)
        denom = np.where(g == 0, tiny, np.where(np.isinf(g), mx, np.abs(g)))
        out = abs_err / denom
        a_nan, g_nan = np.isnan(a), np.isnan(g)
        out = np.where(a_nan | g_nan, np.where(a_nan & g_nan, 0.0, np.inf), out)
    return out


def summarize(err: Any) -> dict[str, float]:
    """{"max", "p50", "p99", "mean"} of an error array (NaN entries ignored; empty → zeros); plus "n"."""
    e = np.asarray(err, dtype=np.float64).reshape(-1)
    e = e[~np.isnan(e)]
    if e.size == 0:
        return {"max": 0.0, "p50": 0.0, "p99": 0.0, "mean": 0.0, "n": 0}
    with np.errstate(all="ignore"):
        finite = e[np.isfinite(e)]
        p50, p99 = (
            np.percentile(e, [50, 99], method="higher")
            if finite.size == e.size
            else np.percentile(np.where(np.isfinite(e), e, np.finfo(np.float64).max), [50, 99], method="higher")
        )
        p50 = float("inf") if p50 == np.finfo(np.float64).max else float(p50)
        p99 = float("inf") if p99 == np.finfo(np.float64).max else float(p99)
        return {"max": float(e.max()), "p50": p50, "p99": p99, "mean": float(e.mean()), "n": int(e.size)}
