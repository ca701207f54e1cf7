"""Correct rounding (round-to-nearest, ties-to-even) of a double-double value hi + lo to a float dtype.

For a target with precision p (significand bits incl. the hidden one), minimum normal exponent e_min
and largest finite value M, the rounding of v = hi + lo is

    e = max(⌊log2|v|⌋, e_min),   q = 2^(e − p + 1) (the quantum: spacing of the target at v),
    r = RNE(v / q) · q,          r → ±inf when |r| > M (IEEE: |v| ≥ M + q/2 overflows).

``hi`` is a float64, so the scaling v/q = hi/q is exact and ``numpy.rint`` rounds it to nearest-even;
``lo`` only matters when hi/q lies exactly on a tie (a half-integer): then lo > 0 rounds away from hi's
floor, lo < 0 towards it, and lo = 0 keeps the even neighbour. Every midpoint of a target with p ≤ 52
is a float64, so when hi is not a midpoint, hi + lo (|lo| ≤ ulp(hi)/2) rounds the same way as hi. For
float64 the IEEE sum fl(hi + lo) *is* the correctly rounded value. Subnormals follow from the clamp
e ≥ e_min (fixed quantum below the normal range); signed zeros are kept.
"""

from __future__ import annotations

import numpy as np
import torch

from golden import dd
from golden.formats import fmt


def _round_bits(x: np.ndarray, p: int) -> np.ndarray:
    """RNE of float64 values to p significant bits by integer arithmetic on their bit patterns (valid where the
    value and the result are normal in the target: adding half an ULP − 1 + the kept last bit, then truncating,
    rounds to nearest with ties to even; a carry out of the significand moves to the next binade, as it must)."""
    shift = np.uint64(53 - p)
    bits = np.ascontiguousarray(x).view(np.uint64)
    last = (bits >> shift) & np.uint64(1)
    half_minus_one = np.uint64((1 << (53 - p - 1)) - 1)
    return ((bits + half_minus_one + last) & ~np.uint64((1 << (53 - p)) - 1)).view(np.float64)


def round_to_grid(hi: np.ndarray, lo: np.ndarray | None, dtype: torch.dtype) -> np.ndarray:
    """RNE(hi + lo) in ``dtype``, returned as float64 values (exactly representable in dtype, or ±inf/NaN).

    Plain float64 values (no ``lo``) in the target's normal range take an integer fast path (_round_bits, about
    30× faster: the corpus rounds 10⁸ recipe weights); the rest — subnormal, overflowing, non-finite, or with a
    ``lo`` part — the general path below.
    """
    hi = np.asarray(hi, dtype=np.float64)
    if lo is None and dtype != torch.float64:
        f = fmt(dtype)
        fast = _round_bits(hi, f.p)
        exponent = np.uint64(0x7FF)  # biased exponents: normal in the target before and after (NaN, ±inf: not)
        before = (np.ascontiguousarray(hi).view(np.uint64) >> np.uint64(52)) & exponent
        after = (fast.view(np.uint64) >> np.uint64(52)) & exponent
        normal = (before >= np.uint64(f.emin + 1023)) & (after <= np.uint64(f.emax + 1023))
        if normal.all():
            return fast
        rest = ~normal
        out = np.where(normal, fast, 0.0)
        out[rest] = _round_general(hi[rest], np.zeros(int(rest.sum())), dtype)
        return out
    return _round_general(hi, lo, dtype)


def _round_general(hi: np.ndarray, lo: np.ndarray | None, dtype: torch.dtype) -> np.ndarray:
    hi = np.asarray(hi, dtype=np.float64)
    lo = np.zeros_like(hi) if lo is None else np.broadcast_to(np.asarray(lo, dtype=np.float64), hi.shape)
    with np.errstate(all="ignore"):
        h0 = hi
        hi, lo = dd.fast_two_sum(hi, lo)  # normalise so that |lo| ≤ ulp(hi)/2
        hi = np.where(hi == 0, h0, hi)  # keep the sign of a zero (−0 + 0 = +0 in IEEE)
        bad = ~np.isfinite(hi)
        lo = np.where(bad, 0.0, lo)
        if dtype == torch.float64:
            return np.where(bad, hi, hi + lo)  # IEEE addition rounds the exact sum hi + lo: correct rounding
        f = fmt(dtype)
        _, e2 = np.frexp(hi)  # hi = m·2^e2, m ∈ [0.5, 1) → ⌊log2|hi|⌋ = e2 − 1 (exact, unlike log2)
        e = np.maximum(e2 - 1, f.emin)
        shift = f.p - 1 - e  # hi·2^shift has p integer bits at most
        scaled = np.ldexp(hi, shift)
        r = np.rint(scaled)
        frac = scaled - np.floor(scaled)
        tie = frac == 0.5
        up = np.floor(scaled) + 1.0
        down = np.floor(scaled)
        r = np.where(tie & (lo > 0), up, np.where(tie & (lo < 0), down, r))
        out = np.ldexp(r, -shift)
        out = np.where(np.abs(out) > f.max, np.copysign(np.inf, hi), out)
        out = np.where(r == 0, np.copysign(0.0, hi), out)
        return np.where(bad, hi, out)


def round_dd(hi: np.ndarray, lo: np.ndarray | None, dtype: torch.dtype) -> torch.Tensor:
    """The CPU torch tensor of dtype holding RNE(hi + lo) (the cast of exactly representable values is exact)."""
    vals = round_to_grid(hi, lo, dtype)
    return torch.from_numpy(np.ascontiguousarray(vals)).to(dtype)
