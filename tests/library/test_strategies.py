"""Meta-tests: the strategies reach every regime the laws rely on (Hypothesis ``find``), and draw exactly.

If one of these fails, a law silently stopped exercising a regime: a wrong implementation could pass.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import find

from golden.formats import FORMATS
from properties.library import strategies as S
from properties.numerics.ulp import as_f64
from tests.common.search import FIND, reach

DTYPES = tuple(f.dtype for f in FORMATS)
_f64 = as_f64  # the one tensor → float64 conversion


# ---------------------------------------------------------------------------------------------- dims, shapes


@pytest.mark.parametrize("D", [1, 3, 123, 769])
def test_dims_reach_the_non_powers_of_two(D):
    reach(S.dims(slow=False), lambda d: d == D)


def test_dims_reach_8192_only_in_the_slow_tier():
    reach(S.dims(slow=True), lambda d: d == 8192)
    with pytest.raises(AssertionError, match="no example"):
        reach(S.dims(slow=False), lambda d: d > 769, max_examples=300)


@pytest.mark.parametrize("shape_rank", [0, 1, 2])
def test_batch_shapes_reach_1d_2d_and_3d_inputs(shape_rank):
    reach(S.batch_shapes(), lambda s: len(s) == shape_rank)


def test_configs_reach_mqa_mha_and_strict_gqa():
    reach(S.configs(), lambda c: c.n_kv_heads == 1 and c.n_heads > 1)
    reach(S.configs(), lambda c: c.n_kv_heads == c.n_heads > 1)
    reach(S.configs(), lambda c: 1 < c.n_kv_heads < c.n_heads)


def test_block_cases_reach_one_token_and_several():
    reach(S.block_cases(torch.float32), lambda c: c.x.shape[1] == 1)
    reach(S.block_cases(torch.float32), lambda c: c.x.shape[1] >= 4)


def test_block_cases_reach_large_attention_logits():
    def max_logit(c):
        x, wq, wk = _f64(c.x), _f64(c.params["attn.wq.weight"]), _f64(c.params["attn.wk.weight"])
        return np.abs(x @ wq.T).max() * np.abs(x @ wk.T).max() / math.sqrt(c.config.head_dim)

    reach(S.block_cases(torch.float32), lambda c: max_logit(c) > 30)


# ---------------------------------------------------------------------------------------------- values


@pytest.mark.parametrize("dtype", DTYPES)
def test_drawn_values_are_exact_in_the_dtype(dtype):
    """Every value the strategies produce is a value of the dtype: nothing rounds after the draw."""
    x = reach(S.rows(dtype, 5), lambda r: True).x
    assert x.dtype == dtype
    for v in (
        reach(S.exact_floats(dtype), lambda v: v != 0),
        reach(S.exact_floats(dtype), lambda v: abs(v) < 1e-30 or abs(v) > 1e4),
    ):
        assert float(torch.tensor(v, dtype=torch.float64).to(dtype).double()) == v


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_exact_floats_reach_subnormals_and_the_top_binade(dtype):
    tiny = float(torch.finfo(dtype).tiny)
    reach(S.exact_floats(dtype), lambda v: 0 < abs(v) < tiny)
    reach(S.exact_floats(dtype), lambda v: abs(v) >= float(torch.finfo(dtype).max) / 2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_all_finite_values_is_exhaustive(dtype):
    values = S.all_finite_values(dtype)
    assert values.numel() == (63488 if dtype == torch.float16 else 65280)  # 2^16 minus the inf/NaN patterns
    assert torch.isfinite(values).all()
    assert len(set(values.view(torch.int16).tolist())) == values.numel()


@pytest.mark.parametrize(
    ("kind", "condition"),
    [
        ("zero", lambda r: bool(np.all(r == 0))),
        ("constant", lambda r: r.size > 1 and bool(np.all(r == r[0])) and r[0] != 0),
        ("eps_dominated", lambda r: 0 < np.mean(r * r) < 1e-6),
        ("large", lambda r: np.abs(r).max() > 256),
        ("mean_shifted", lambda r: abs(r.mean()) > r.std()),
        ("outlier", lambda r: r.size >= 8 and np.abs(r).max() > 8 * np.median(np.abs(r))),
        ("tiny_and_huge", lambda r: r.size >= 4 and np.abs(r).max() > 256 * np.abs(r[r != 0]).min()),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_row_regimes_are_reachable(kind, condition, dtype):
    def has(rows):
        x = _f64(rows.x).reshape(-1, rows.x.shape[-1])
        return any(k == kind and condition(x[i]) for i, k in enumerate(rows.kinds))

    reach(S.rows(dtype), has)


def test_row_magnitudes_span_1e_minus_4_to_1e4():
    reach(S.rows(torch.float32), lambda r: float(r.x.abs().max()) > 1e4)
    reach(S.rows(torch.float32), lambda r: 0 < float(r.x.abs().max()) < 1e-3)


def test_fp16_rows_stay_finite_and_exceed_256():
    rows = reach(S.rows(torch.float16), lambda r: float(r.x.abs().max()) > 256)
    assert torch.isfinite(rows.x).all()


def test_rows_with_a_dynamic_range_over_1e6_inside_the_tensor():
    def dyn(r):
        a = _f64(r.x.abs())
        return a[a > 0].size > 1 and a.max() / a[a > 0].min() > 1e6

    reach(S.rows(torch.float32), dyn)


@pytest.mark.parametrize("kind", S.GAMMA_KINDS)
def test_gamma_kinds_are_reachable(kind):
    reach(S.gammas(16, torch.float32), lambda g: g.kind == kind)


def test_gamma_reaches_negative_values_and_exact_zeros():
    reach(S.gammas(8, torch.float32), lambda g: bool((g.weight < 0).any()))
    reach(S.gammas(8, torch.float32), lambda g: bool((g.weight == 0).any()))


def test_eps_values_include_the_llama_defaults():
    for eps in (1e-6, 1e-5):
        reach(S.eps_values(), lambda e, eps=eps: e == eps)


def test_swiglu_cases_reach_f_below_and_above_d():
    reach(S.swiglu_cases(torch.float32), lambda c: c.w_gate.shape[0] < c.x.shape[-1])
    reach(S.swiglu_cases(torch.float32), lambda c: c.w_gate.shape[0] > 2 * c.x.shape[-1])


def test_weight_scale_is_controllable():
    w = S.linear_weight(64, 256, torch.float64, seed=0, scale=4.0)
    assert 3.0 < float(w.std() * math.sqrt(256)) < 5.0


def test_row_cases_keep_row_i_and_change_the_others():
    rc = reach(S.row_cases(torch.float32), lambda rc: rc.case.x.reshape(-1, rc.case.x.shape[-1]).shape[0] >= 3)
    x, other = rc.case.x.reshape(-1, rc.case.x.shape[-1]), rc.other.reshape(-1, rc.case.x.shape[-1])
    assert torch.equal(x[rc.i], other[rc.i])


def test_causal_cases_keep_the_tokens_before_t():
    cc = reach(S.causal_cases(torch.float32), lambda cc: cc.t >= 2)
    assert torch.equal(cc.case.x[:, : cc.t], cc.other[:, : cc.t])


def test_scaled_cases_scale_exactly_and_reach_fp16_overflow_of_x_squared():
    sc = reach(S.scaled_rmsnorm_cases(torch.float16), lambda sc: float(sc.case.x.abs().max()) * 2**sc.log2_alpha > 256)
    xa = sc.case.x.double() * 2**sc.log2_alpha
    assert torch.equal(xa.to(torch.float16).double(), xa)  # α·x is exact: no overflow, no lost bits


def test_elementwise_rows_shrink_to_ones():
    """A small row is drawn element-wise from bit codes and shrinks element-wise, to all ones (code 0)."""
    rows = find(S.rows(torch.bfloat16, 4, batch=(1,), kinds=("normal",)), lambda r: True, settings=FIND)
    assert torch.equal(rows.x, torch.ones(1, 4, dtype=torch.bfloat16))


def test_pins_build_in_every_dtype():
    for pin in (*S.RMSNORM_PINS.values(), *S.SWIGLU_PINS.values()):
        for dtype in DTYPES:
            case = pin.build(dtype)
            assert case.x.dtype == dtype and torch.isfinite(case.x).all()


def test_every_draw_in_the_strategies_is_labelled():
    """Every ``draw(...)`` call in every module of properties/library/strategies/ passes ``label=`` (a failure names
    what was drawn)."""
    import ast
    from pathlib import Path

    calls = [
        (path.name, n)
        for path in sorted(Path(S.__file__).parent.glob("*.py"))
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "draw"
    ]
    unlabelled = [f"{name}:{n.lineno}" for name, n in calls if not any(k.arg == "label" for k in n.keywords)]
    assert calls and not unlabelled, f"draw() without label= at {unlabelled}"


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_case_kind_draws_in_every_dtype(dtype):
    """Ten cases of each kind draw without error (what they cost: bench/draw_times.py, not a timed test)."""
    for strategy in (S.rmsnorm_cases(dtype), S.swiglu_cases(dtype), S.block_cases(dtype)):
        with pytest.raises(AssertionError, match="no example in 10 draws"):
            reach(strategy, lambda c: False, max_examples=10)
