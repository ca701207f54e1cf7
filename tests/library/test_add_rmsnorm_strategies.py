"""Meta-tests of the AddRMSNorm strategies: every branch kind and stream regime is reached, the sums stay finite
(fp16 included), cancelling branches give a small h, the corner pairs are what their IEEE sums say, and the pins
build in every dtype.

If one of these fails, an AddRMSNorm law silently stopped exercising a regime.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings

from golden.formats import fmt
from properties.library import strategies as S
from properties.library.laws.add_rmsnorm import rounded_once
from tests.common.search import FIND, reach

DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _f64(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy()


@pytest.mark.parametrize("branch", S.BRANCH_KINDS)
def test_every_branch_kind_is_reached(branch):
    reach(S.add_rmsnorm_cases(torch.bfloat16), lambda c: c.branch == branch)


def test_the_branch_is_scaled_to_the_stream():
    def ratio(c):
        x, r = _f64(c.x), _f64(c.residual)
        return np.abs(x).max() / max(np.abs(r).max(), 1e-300)

    reach(S.add_rmsnorm_cases(torch.float32), lambda c: c.branch == "small" and 0 < ratio(c) < 2.0**-6)
    reach(S.add_rmsnorm_cases(torch.float32), lambda c: c.branch == "large" and ratio(c) > 2.0)


def test_a_cancelling_branch_leaves_a_small_sum():
    def small(c):
        r, h = _f64(c.residual), _f64(c.x) + _f64(c.residual)
        return c.branch == "cancelling" and np.abs(r).max() > 0 and np.abs(h).max() < np.abs(r).max() / 8

    reach(S.add_rmsnorm_cases(torch.bfloat16), small)


@pytest.mark.parametrize("kind", ["eps_dominated", "outlier", "constant", "zero", "large"])
def test_the_stream_reaches_every_row_regime(kind):
    reach(S.add_rmsnorm_cases(torch.float16), lambda c: kind in c.kinds)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sums_and_cases_are_finite_and_of_one_shape_and_dtype(dtype):
    @settings(FIND, max_examples=150)
    @given(S.add_rmsnorm_cases(dtype))
    def check(c):
        assert c.x.shape == c.residual.shape and c.x.dtype == c.residual.dtype == c.weight.dtype == dtype
        assert torch.isfinite(rounded_once(c.x, c.residual)).all()  # fp16: the sum stays below 65504

    check()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_corner_pairs_sum_to_their_ieee_corners(dtype):
    pairs = S.sum_corners(dtype)
    x, r = (torch.tensor([p[k] for p in pairs], dtype=torch.float64).to(dtype) for k in (0, 1))
    h = _f64(rounded_once(x, r))
    neg_zero, pos_zero, tie_down, tie_up = h[:4]
    assert neg_zero == 0 and np.signbit(neg_zero) and pos_zero == 0 and not np.signbit(pos_zero)
    u = 2.0 ** -fmt(dtype).p
    assert tie_down == 1.0 and tie_up == 1.0 + 4 * u  # ties to even, both ways
    assert list(np.isposinf(h[4:8])) == [True, True, False, True] and np.isneginf(h[6])
    assert np.isnan(h[8]) and np.isnan(h[9])


def test_corners_are_injected():
    reach(S.add_rmsnorm_sum_cases(torch.float32), lambda c: not torch.isfinite(c.x).all())


@pytest.mark.parametrize("name", list(S.ADD_RMSNORM_PINS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_pins_build_in_every_dtype(name, dtype):
    case = S.ADD_RMSNORM_PINS[name].build(dtype)
    c = getattr(case, "case", case)
    assert c.x.dtype == c.residual.dtype == dtype and c.x.shape == c.residual.shape
