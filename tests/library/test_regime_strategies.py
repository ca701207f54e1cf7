"""Meta-tests of the regime cases: the views hold the values they claim with the layout they claim, the pinned
cases reach the sizes the laws promise (D up to 16384, F = 28672, T = 1024, ≥ 64 rows), the domain cases straddle
the overflow threshold, and the reach construction is what the law's exactness argument assumes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from properties.library import strategies as S
from properties.library.laws import domain, lifecycle, sequence
from properties.numerics import bounds
from tests.common.search import reach

DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 6), (4, 1)])
@pytest.mark.parametrize("layout", S.LAYOUTS)
def test_a_view_holds_the_values_with_its_layout(layout, shape):
    x = torch.arange(np.prod(shape), dtype=torch.float32).reshape(shape) + 1
    v = S.as_layout(x, layout)
    assert v.shape == x.shape and v.dtype == x.dtype
    expected = x.reshape(-1, shape[-1])[:1].expand(*shape[:-1], shape[-1]) if layout == "expanded" else x
    assert torch.equal(v, expected)
    if layout == "transposed":
        assert v.stride()[-1] != 1 or shape[-1] == 1
    if layout in ("fused_slice", "offset"):
        assert v.storage_offset() > 0
    if layout in ("fused_slice", "strided") and x.numel() > shape[-1]:
        assert not v.is_contiguous()
        assert torch.isnan(torch.as_strided(v, (v.untyped_storage().nbytes() // 4,), (1,), 0)).any()
    if layout == "expanded" and x.numel() > shape[-1]:
        assert 0 in v.stride()


@pytest.mark.parametrize("layout", ["transposed", "fused_slice", "offset"])
def test_weight_views_hold_the_weight(layout):
    w = torch.randn(6, 4)
    v = S.weight_as_layout(w, layout)
    assert torch.equal(v, w) and not (v.is_contiguous() and v.storage_offset() == 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pins_reach_model_sizes_long_sequences_and_many_rows(dtype):
    assert [p.build(dtype).x.shape[-1] for p in S.WIDTH_PINS.values()] == list(S.MODEL_WIDTHS)
    assert [p.build(dtype).case.x.shape[-1] for p in S.WIDTH_ROW_PINS.values()] == list(S.MODEL_WIDTHS)
    (hidden,) = S.HIDDEN_PINS.values()
    assert hidden.build(dtype).case.w_gate.shape[0] == S.MODEL_HIDDEN == 28672
    assert S.CAUSAL_PINS["T=1024, t=700"].build(dtype).case.x.shape[1] == S.LONG_T == 1024
    (pin,) = sequence.REACH_PINS.values()
    assert pin.build(dtype).case.x.shape[1] == 1024 and pin.build(dtype).j == 0
    for p in S.GRAD_PINS.values():
        x = p.build(dtype).case.x
        assert x.reshape(-1, x.shape[-1]).shape[0] == S.MANY_ROWS >= 2 * 64
    assert lifecycle._pinned_life(dtype).case.x.shape[1] >= 2


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_reach_case_is_zero_but_token_j_with_no_small_entry(dtype):
    rc = reach(sequence.reach_cases(dtype), lambda rc: rc.case.x.shape[0] == 2 and rc.j > 0)
    x, j = rc.case.x.double(), rc.j
    assert not x[0, :j].any() and not x[0, j + 1 :].any() and not x[1:].any()
    row = x[0, j].abs()
    assert (row >= row.max() / 8).all() and (row > 0).all()
    p = sequence.reach_params(rc.case)
    assert not p["attn.wq.weight"].any() and not p["attn.wk.weight"].any() and not p["ffn.w_down.weight"].any()
    assert torch.equal(p["attn.wo.weight"], torch.eye(rc.case.config.dim, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_domain_cases_straddle_the_overflow_threshold(dtype):
    def judged(dc):
        with np.errstate(over="ignore", invalid="ignore"):
            b = bounds.rmsnorm(dc.case.x, dc.case.weight, dc.case.eps, dtype)
        return ~np.asarray(b.overflow).any(axis=-1)

    dc = reach(domain.domain_cases(dtype), lambda dc: min(dc.log2_ratio) < 0 < max(dc.log2_ratio))
    inside = judged(dc)
    assert all(inside[i] == (k < 0) for i, k in enumerate(dc.log2_ratio))
    assert torch.isfinite(dc.case.x).all()


def test_fp16_domain_cases_reach_the_top_of_fp16():
    dc = reach(domain.domain_cases(torch.float16), lambda dc: float(dc.case.x.abs().max()) >= 60000)
    assert all(k < 0 for k in dc.log2_ratio) and torch.isfinite(dc.case.x).all()
