"""The assertion helpers: one ULP implementation behind every recorded max_ulp, NaN judged by the law's exact answer,
the bound's formula in every message, headroom recorded (error ÷ bound, and against the pairwise reference)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import golden
from properties.library import context
from properties.library.assertions import EXCESS, assert_bitwise_equal, assert_close, assert_matches_golden
from properties.numerics import bounds, ulp


def _context() -> context.LawContext:
    return context.LawContext("RMSNorm.test", "RMSNorm", torch.float32, "cpu", "ci", False, 0, "repro")


def _bound(abs_: float | np.ndarray, shape: tuple[int, ...], pairwise: float | None = None, dtype=torch.float32):
    a = np.broadcast_to(np.asarray(abs_, dtype=np.float64), shape).copy()
    pw = None if pairwise is None else np.full(shape, pairwise)
    return bounds.Bound(a, None, "test formula 0.5 + k·u", "test", dtype, None, pw)


def test_recorded_max_ulp_is_ulp_error_on_the_power_of_two_case() -> None:
    """Golden 1 − 2⁻⁶⁰ lies in the binade below 1 (spacing 2⁻²⁴ in fp32): an fp32 result three spacings below 1 is
    3 ULP off, as ``ulp.ulp_error`` says — the assertions record that number, not a private copy's 1.5."""
    gold = golden.Golden(np.array([1.0]), np.array([-(2.0**-60)]))
    actual = torch.tensor([1 - 3 * 2.0**-24], dtype=torch.float32)
    expected = float(ulp.ulp_error(actual, gold)[0])
    assert math.isclose(expected, 3.0, rel_tol=1e-9)
    with context.open_context(_context()) as ctx:
        returned = assert_matches_golden(actual, gold, _bound(1.0, (1,)))
    assert returned == expected and ctx.recorder.max_ulp == expected


def test_a_nan_output_never_matches_a_finite_golden_value() -> None:
    gold = golden.Golden(np.array([1.0, 2.0]), np.zeros(2))
    with pytest.raises(AssertionError, match="non-finite value where the law's exact answer is finite"):
        assert_matches_golden(torch.tensor([1.0, float("nan")]), gold, _bound(1e30, (2,)))


def test_nan_and_the_same_infinity_agree_only_where_golden_is_that_value() -> None:
    gold = golden.Golden(np.array([np.nan, np.inf, 1e39]), np.zeros(3))  # 1e39 overflows fp32: rounds to +inf
    assert_matches_golden(torch.tensor([float("nan"), float("inf"), float("inf")]), gold, _bound(0.0, (3,)))
    with pytest.raises(AssertionError):
        assert_matches_golden(torch.tensor([1.0, float("inf"), float("inf")]), gold, _bound(0.0, (3,)))
    with pytest.raises(AssertionError):
        assert_matches_golden(torch.tensor([float("nan"), -float("inf"), float("inf")]), gold, _bound(0.0, (3,)))


def test_an_infinity_passes_where_golden_plus_bound_reaches_overflow() -> None:
    big = float(torch.finfo(torch.float32).max)
    gold = golden.Golden(np.array([big]), np.zeros(1))
    assert_matches_golden(torch.tensor([float("inf")]), gold, _bound(big, (1,)))
    with pytest.raises(AssertionError):
        assert_matches_golden(torch.tensor([float("inf")]), gold, _bound(1.0, (1,)))


def test_assert_close_counts_nan_against_nan_as_an_infinite_error_where_the_exact_answer_is_finite() -> None:
    nan = np.array([np.nan, 1.0])
    with pytest.raises(AssertionError, match="non-finite"):
        assert_close(nan, nan, _bound(1.0, (2,)), what="f(x) vs f(x)")
    assert_close(nan, nan, _bound(1.0, (2,)), what="f(x) vs f(x)", exact_nonfinite=np.array([True, False]))
    inf = np.array([np.inf])
    with pytest.raises(AssertionError):
        assert_close(inf, inf, _bound(1.0, (1,)), what="f(x) vs f(x)")


def test_assert_close_does_not_judge_elements_with_an_infinite_bound() -> None:
    assert_close(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), _bound(np.array([np.inf, 0.0]), (2,)), what="y")


def test_bitwise_equality_never_accepts_nan_for_a_finite_exact_answer() -> None:
    nan = torch.tensor([float("nan")])
    with pytest.raises(AssertionError, match="not bitwise equal"):
        assert_bitwise_equal(nan, nan, what="f(x[:k]) vs f(x)[:k]")
    assert_bitwise_equal(nan, nan, what="f(NaN)", nan_expected=True)


def test_the_bound_formula_travels_into_the_failure_message() -> None:
    with pytest.raises(AssertionError, match=r"test formula 0\.5 \+ k·u"):
        assert_close(np.array([1.0]), np.array([2.0]), _bound(0.5, (1,)), what="y")


def test_headroom_and_order_class_are_recorded() -> None:
    with context.open_context(_context()) as ctx:
        assert_close(np.array([1.0]), np.array([1.5]), _bound(1.0, (1,), pairwise=0.25), what="y")
    m = ctx.recorder.measurements
    assert m["headroom"] == 0.5 and m["pairwise headroom"] == 2.0 and m["order class"] == "any order"
    assert bounds.order_class(0.5, 0.9) == "pairwise" and bounds.order_class(1.5, 0.1) == "out of bound"


def test_an_empirical_bound_reports_the_largest_excess_beyond_its_measured_part() -> None:
    """The Block derivative oracle's bound (twice the baselines' error + UNSEEN_ROUNDINGS·u at the scale) reports
    (error − twice the baselines' error) ÷ (u at the scale), the largest over the run: the calibration of
    UNSEEN_ROUNDINGS (bench/oracle_excess.py) reads it."""
    cfg = type("Config", (), {"dim": 2, "ffn_dim": 4})()
    exact = np.array([1.0, -2.0])
    ref = exact + np.array([3.0, 0.0]) * 2.0**-24  # a baseline 3 u_fp32 off at |exact| = 1, i.e. 1.5 u at the scale 2
    b = bounds.block_vjp([ref], exact, cfg, 1, torch.float32)
    unit = 2.0**-24 * 2.0
    assert b.empirical == (6 * 2.0**-24, unit)
    with context.open_context(_context()) as ctx:
        assert_close(exact + np.array([0.0, 7 * 2.0**-24]), exact, b, what="vᵀJ")  # 7 u_fp32 = 2·3 u + 0.5 unit
        assert_close(exact + np.array([4 * 2.0**-24, 0.0]), exact, b, what="vᵀJ")  # −1 unit: the largest stays
    assert ctx.recorder.measurements[EXCESS] == 0.5
    with pytest.raises(AssertionError):  # beyond 2·3 u + 4 units = 14 u_fp32
        assert_close(exact + np.array([0.0, 15 * 2.0**-24]), exact, b, what="vᵀJ")
