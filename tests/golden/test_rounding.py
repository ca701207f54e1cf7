"""Correct rounding of double-double values: every fp16/bf16 bit pattern against torch's own casts, ties
decided by lo, subnormals and overflow, and random fp32/fp64 ties against an exact Fraction oracle."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from golden.formats import FORMATS, fmt
from golden.rounding import round_dd, round_to_grid

SIXTEEN = [torch.float16, torch.bfloat16]


def _all_finite_patterns(dtype: torch.dtype) -> torch.Tensor:
    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    return bits[torch.isfinite(bits)]


def _sorted_positive(dtype: torch.dtype) -> torch.Tensor:
    v = _all_finite_patterns(dtype)
    v = v[v >= 0].double().unique()  # drops −0, sorted ascending
    return v


@pytest.mark.parametrize("dtype", SIXTEEN, ids=["fp16", "bf16"])
def test_every_bit_pattern_rounds_to_itself(dtype: torch.dtype) -> None:
    v = _all_finite_patterns(dtype)
    got = round_dd(v.double().numpy(), None, dtype)
    assert torch.equal(got.view(torch.int16), v.view(torch.int16))  # bitwise, −0 included


@pytest.mark.parametrize("dtype", SIXTEEN, ids=["fp16", "bf16"])
def test_midpoints_match_torch_fp32_casts(dtype: torch.dtype) -> None:
    """Every midpoint between consecutive values (and the fp32 neighbours of it) rounds as torch's fp32 cast."""
    v = _sorted_positive(dtype)
    mid = (v[:-1] + v[1:]) / 2  # exact in fp64 and fp32 (p ≤ 11 < 24)
    mid32 = mid.float()
    probes = torch.cat([mid32, torch.nextafter(mid32, torch.tensor(0.0)), torch.nextafter(mid32, torch.tensor(1e30))])
    probes = torch.cat([probes, -probes])
    want = probes.to(dtype)
    got = round_dd(probes.double().numpy(), None, dtype)
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))


@pytest.mark.parametrize("dtype", SIXTEEN, ids=["fp16", "bf16"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_ties_are_decided_by_lo(dtype: torch.dtype, sign: float) -> None:
    v = _sorted_positive(dtype)
    lo_v, hi_v = v[:-1].numpy(), v[1:].numpy()
    mid = (lo_v + hi_v) / 2
    tiny = np.ldexp(np.abs(mid), -80)  # far below the fp64 ulp of mid: only the sign matters
    up = round_to_grid(sign * mid, sign * tiny, dtype)
    down = round_to_grid(sign * mid, -sign * tiny, dtype)
    even = round_to_grid(sign * mid, np.zeros_like(mid), dtype)
    assert np.array_equal(up, sign * hi_v)
    assert np.array_equal(down, sign * lo_v)
    want_even = torch.from_numpy(sign * mid).float().to(dtype).double().numpy()  # torch's RNE of the exact tie
    assert np.array_equal(even, want_even)


@pytest.mark.parametrize("dtype", [f.dtype for f in FORMATS], ids=[f.name for f in FORMATS])
def test_overflow_threshold_is_max_plus_half_ulp(dtype: torch.dtype) -> None:
    mx = float(torch.finfo(dtype).max)
    half_ulp = np.ldexp(1.0, int(np.frexp(mx)[1]) - 1 - fmt(dtype).p)
    if dtype == torch.float64:
        hi, lo = np.array([mx, mx, -mx]), np.array([half_ulp, half_ulp * (1 - 2.0**-20), -half_ulp])
        want = [np.inf, mx, -np.inf]
    else:
        hi = np.array([mx + half_ulp, mx + half_ulp, mx + half_ulp * 0.999, -(mx + half_ulp), 1e300])
        lo = np.array([0.0, -1e-300, 0.0, 0.0, 0.0])
        want = [np.inf, mx, mx, -np.inf, np.inf]  # the tie at max + ulp/2 goes to the even "2^emax+1" → inf
    assert np.array_equal(round_to_grid(hi, lo, dtype), np.array(want))


@pytest.mark.parametrize("dtype", [f.dtype for f in FORMATS], ids=[f.name for f in FORMATS])
def test_subnormals_round_on_the_fixed_quantum(dtype: torch.dtype) -> None:
    f = fmt(dtype)
    q = np.ldexp(1.0, f.emin - f.p + 1)  # subnormal spacing
    k = np.arange(0, 9, dtype=np.float64)
    if dtype == torch.float64:  # fp64 subnormals: hi is the value itself, lo = ±half a spacing is below fp64 range
        assert np.array_equal(round_to_grid(k * q, None, dtype), k * q)
        return
    vals = (k + 0.5) * q  # ties: to even multiples of q
    got = round_to_grid(vals, None, dtype)
    assert np.array_equal(got, 2 * np.round((k + 0.5) / 2) * q)
    assert np.array_equal(round_to_grid(vals, np.full_like(vals, q * 2.0**-60), dtype), (k + 1) * q)
    assert np.array_equal(round_to_grid(np.array([0.49 * q, -0.49 * q]), None, dtype), np.array([0.0, -0.0]))
    assert np.signbit(round_to_grid(np.array([-0.49 * q]), None, dtype))[0]


def _fraction_round(x: Fraction, p: int, emin: int) -> Fraction:
    """Independent oracle: RNE of an exact rational to precision p (unbounded exponent above, fixed quantum below)."""
    if x == 0:
        return Fraction(0)
    s = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = Fraction(2) ** (max(e, emin) - p + 1)
    n, r = divmod(a, q)
    if r * 2 > q or (r * 2 == q and n % 2 == 1):
        n += 1
    return s * n * q


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
@pytest.mark.parametrize("seed", range(4))
def test_near_ties_against_exact_fractions(dtype: torch.dtype, seed: int) -> None:
    rng = np.random.default_rng(seed)
    f = fmt(dtype)
    n = 300
    base = rng.standard_normal(n) * np.exp2(rng.integers(-60, 60, n))
    if dtype == torch.float32:
        base = base.astype(np.float32).astype(np.float64)
        spacing = np.ldexp(1.0, np.frexp(base)[1] - f.p)
        hi = base + spacing / 2  # exact fp32 midpoint, representable in fp64
        lo = rng.choice([-1.0, 0.0, 1.0], n) * np.abs(hi) * 2.0 ** -rng.integers(54, 100, n)
    else:
        hi = base
        ulp = np.ldexp(1.0, np.frexp(base)[1] - 53)
        lo = rng.choice([-0.5, 0.5, -0.4999, 0.5001, 0.0], n) * ulp
    got = round_to_grid(hi, lo, dtype)
    want = [float(_fraction_round(Fraction(h) + Fraction(lv), f.p, f.emin)) for h, lv in zip(hi, lo, strict=True)]
    assert np.array_equal(got, np.array(want))
