"""ULP spacing (powers of two, subnormals, DD goldens), ULP error and extended relative error semantics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import golden
from golden.formats import FORMATS, NAMES, fmt
from properties.numerics import ulp

DTYPES = [f.dtype for f in FORMATS]
IDS = list(NAMES)
P = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}
EMIN = {torch.float64: -1022, torch.float32: -126, torch.float16: -14, torch.bfloat16: -126}


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_unit_roundoff_is_two_to_minus_p(dtype: torch.dtype) -> None:
    assert fmt(dtype).p == P[dtype]  # the one dtype table (golden.formats)
    assert fmt(dtype).u == 2.0 ** -P[dtype] == float(torch.finfo(dtype).eps) / 2


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_ulp_matches_the_spacing_of_the_dtype(dtype: torch.dtype) -> None:
    """ulp(v) = nextafter(v, +inf) − v for every positive normal and subnormal value of a sample (torch's own)."""
    if dtype in (torch.float16, torch.bfloat16):
        v = torch.arange(0, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    else:
        g = torch.Generator().manual_seed(0)
        mags = 10.0 ** torch.randint(-30, 30, (2000,), generator=g)
        v = torch.cat(
            [
                torch.rand(2000, dtype=dtype, generator=g) * mags,
                torch.tensor([0.0, 1.0, 2.0, 0.5], dtype=dtype),
                torch.finfo(dtype).tiny * torch.rand(50, dtype=dtype, generator=g),
            ]
        )
    v = v[torch.isfinite(v) & (v < torch.finfo(dtype).max)]
    step = (torch.nextafter(v, torch.tensor(float("inf"), dtype=dtype)) - v).double().numpy()
    assert np.array_equal(ulp.ulp(v.double().numpy(), dtype), step)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_ulp_is_exact_just_below_a_power_of_two(dtype: torch.dtype) -> None:
    below = np.nextafter(1.0, 0.0)  # 1 − 2^-53: log2 rounds it to 0, frexp does not
    assert ulp.ulp(np.array([below]), dtype)[0] == 2.0 ** (-1 - P[dtype] + 1)
    assert ulp.ulp(np.array([1.0]), dtype)[0] == 2.0 ** (1 - P[dtype])


def test_ulp_of_a_dd_golden_uses_the_exact_binade() -> None:
    g = golden.Golden(np.array([1.0, 1.0, 1.0]), np.array([-1e-30, 0.0, 1e-30]))
    assert list(ulp.ulp(g, torch.float32)) == [2.0**-24, 2.0**-23, 2.0**-23]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_subnormal_ulp_is_constant(dtype: torch.dtype) -> None:
    q = 2.0 ** (EMIN[dtype] - P[dtype] + 1)
    vals = np.array([0.0, q, 3 * q, 2.0 ** EMIN[dtype] * 0.75])
    assert np.all(ulp.ulp(vals, dtype) == q)


def test_ulp_error_counts_half_ulp_for_correct_rounding() -> None:
    g = golden.rmsnorm(torch.tensor([[3.0, 4.0]]), torch.ones(2), 0.0)
    for dt in DTYPES:
        assert np.all(ulp.ulp_error(g.rounded(dt), g) <= 0.5)
    nxt = torch.nextafter(g.rounded(torch.float32), torch.tensor(10.0))
    e = ulp.ulp_error(nxt, g)
    assert np.all((e > 0.5) & (e < 1.5))


@pytest.mark.parametrize(
    ("actual", "gold", "want"),
    [
        (float("nan"), float("nan"), 0.0),
        (1.0, float("nan"), np.inf),
        (float("nan"), 1.0, np.inf),
        (float("inf"), 70000.0, 0.0),  # golden overflows fp16: inf is the correctly rounded answer
        (float("inf"), 65504.0, np.inf),
        (float("-inf"), 70000.0, np.inf),
        (65504.0, 65504.0, 0.0),
    ],
)
def test_ulp_error_nonfinite_semantics(actual: float, gold: float, want: float) -> None:
    assert ulp.ulp_error(torch.tensor([actual], dtype=torch.float16), np.array([gold]))[0] == want


@pytest.mark.parametrize(
    ("actual", "gold", "want"),
    [
        (0.0, 0.0, 0.0),
        (float("nan"), float("nan"), 0.0),
        (float("nan"), 1.0, np.inf),
        (1.0, float("nan"), np.inf),
        (2.0, 1.0, 1.0),
        (float("inf"), float("inf"), 0.0),
        (1.401298464324817e-45, 0.0, 1.0),  # normalised by the smallest subnormal of fp32
    ],
)
def test_rel_error_is_xsref_extended(actual: float, gold: float, want: float) -> None:
    assert ulp.rel_error(torch.tensor([actual], dtype=torch.float32), np.array([gold]))[0] == want


def test_rel_error_of_early_overflow_is_finite() -> None:
    mx = float(torch.finfo(torch.float32).max)
    e = ulp.rel_error(torch.tensor([float("inf")]), np.array([mx]))[0]
    assert 0 < e < 1e-7


def test_summarize_reports_max_percentiles_mean() -> None:
    s = ulp.summarize(np.arange(101, dtype=np.float64))
    assert s == {"max": 100.0, "p50": 50.0, "p99": 99.0, "mean": 50.0, "n": 101}
    assert ulp.summarize(np.array([]))["max"] == 0.0
    assert ulp.summarize(np.array([1.0, np.inf]))["max"] == np.inf
