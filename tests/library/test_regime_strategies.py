"""Meta-tests of the regime cases: the views hold the values they claim with the layout they claim, the pinned
cases reach the sizes the laws promise (D up to 16384, F = 28672, T = 1024, ≥ 64 rows), the domain cases straddle
the overflow threshold, and the reach construction is what the law's exactness argument assumes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from golden.formats import FORMATS
from properties.library import strategies as S
from properties.library.components import record
from properties.library.laws import block
from properties.numerics import bounds
from tests.common.search import reach

DTYPES = tuple(f.dtype for f in FORMATS)


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
    pin, longest = S.REACH_PINS.values()
    assert pin.build(dtype).case.x.shape[1] == 1024 and pin.build(dtype).j == 0
    if dtype == torch.float32:
        assert longest.build(dtype).case.x.shape[1] == 4097 > 4096 and longest.build(dtype).j == 0
    else:
        assert longest.build(dtype) is None  # the law skips it: T = 4097 runs in fp32 only
    for p in S.GRAD_PINS.values():
        x = p.build(dtype).case.x
        assert x.reshape(-1, x.shape[-1]).shape[0] == S.MANY_ROWS >= 2 * 64


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_reach_case_is_zero_but_token_j_with_no_small_entry(dtype):
    rc = reach(S.reach_cases(dtype), lambda rc: rc.case.x.shape[0] == 2 and rc.j > 0)
    x, j = rc.case.x.double(), rc.j
    assert not x[0, :j].any() and not x[0, j + 1 :].any() and not x[1:].any()
    row = x[0, j].abs()
    assert (row >= row.max() / 8).all() and (row > 0).all()
    p = block.reach_params(rc.case)
    assert not p["attn.wq.weight"].any() and not p["attn.wk.weight"].any() and not p["ffn.w_down.weight"].any()
    assert torch.equal(p["attn.wo.weight"], torch.eye(rc.case.config.dim, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_domain_cases_straddle_the_overflow_threshold(dtype):
    def judged(dc):
        with np.errstate(over="ignore", invalid="ignore"):
            b = bounds.rmsnorm(dc.case.x, dc.case.weight, dc.case.eps, dtype)
        return ~np.asarray(b.overflow).any(axis=-1)

    dc = reach(S.domain_cases(dtype), lambda dc: min(dc.log2_ratio) < 0 < max(dc.log2_ratio))
    inside = judged(dc)
    assert all(inside[i] == (k < 0) for i, k in enumerate(dc.log2_ratio))
    assert torch.isfinite(dc.case.x).all()


def test_fp16_domain_cases_reach_the_top_of_fp16():
    dc = reach(S.domain_cases(torch.float16), lambda dc: float(dc.case.x.abs().max()) >= 60000)
    assert all(k < 0 for k in dc.log2_ratio) and torch.isfinite(dc.case.x).all()


def test_sampled_rows_take_the_ends_every_power_of_two_boundary_and_random_rows():
    n = 2**17 + 3
    rows = S.sampled_rows(n, 0)
    assert rows[0] == 0 and rows[-1] == n - 1 and (np.diff(rows) > 0).all()
    for k in range(17 + 1):
        assert {2**k - 1, 2**k} <= set(rows.tolist())
    assert S.GRID_LIMIT in rows and (rows >= 2 * S.GRID_LIMIT).any()  # the first row past 65,535 programs, and
    # rows past 65,535 programs of two rows
    assert len(rows) >= 2 * 17 + 2 and set(S.sampled_rows(5, 1).tolist()) == {0, 1, 2, 3, 4}


def test_the_code_path_cases_reach_the_sizes_they_name():
    rms = {k: b(torch.float32) for k, b in record("RMSNorm").paths().items()}
    rows = sorted(c.x.shape[0] for c in rms.values())
    assert rows[-1] > 2 * S.GRID_LIMIT and rows[-2] > S.GRID_LIMIT  # past 65,535 and past 2·65,535
    widths = {c.x.shape[-1] for c in rms.values()}
    assert {513, 4097} <= widths and any(w & (w - 1) and w % 2 == 0 for w in widths)  # 2^k + 1, not a power of 2
    assert any(c.x.shape[0] > 4096 and c.x.shape[-1] <= 512 for c in rms.values())  # many narrow rows
    swi = [b(torch.bfloat16) for b in record("SwiGLU").paths().values()]
    assert max(c.x.shape[0] for c in swi) > 2 * S.GRID_LIMIT and all(c.x.dtype == torch.bfloat16 for c in swi)
    blk = [b(torch.float16) for b in record("Block").paths().values()]
    assert max(c.x.shape[0] * c.options["config"].n_heads for c in blk) > S.GRID_LIMIT
    assert any(c.options["config"].head_dim == 34 and c.options["config"].ffn_dim == 65 for c in blk)
    x = rms["2^16 + 1 rows, D = 8"].x
    assert x.dtype == torch.float32 and torch.equal(
        x, record("RMSNorm").paths()["2^16 + 1 rows, D = 8"](torch.float64).x.float()
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(S.LOGIT_PINS))
def test_extreme_logit_pins_put_every_logit_near_4096(dtype, name):
    import nanolm_core

    c = S.LOGIT_PINS[name].build(dtype)
    m = nanolm_core.Block(c.config).double()
    m.load_state_dict({k: v.double() for k, v in c.params.items()})
    a = m.attn
    with torch.no_grad():
        q, k, _ = a.heads(m.attn_norm(c.x.double()))
        cos, sin = a.rope_tables(c.x.shape[1], torch.float64, "cpu")
        s = a.scores(a.rope(q, cos, sin), a.expand_kv(a.rope(k, cos, sin)))
    sign = -1.0 if "−" in name else 1.0
    assert (s * sign > S.EXTREME_LOGIT - 4).all() and (s * sign < S.EXTREME_LOGIT + 4).all()
    assert float(s.max() - s.min()) > 0.5  # nearly equal, not equal: the softmax is not exactly uniform


def test_the_16_bit_backward_pin_has_logits_that_overflow_fp16_exp():
    import nanolm_core

    c = S.BACKWARD_PINS[f"T={S.BACKWARD_T}"].build(torch.float16)
    m = nanolm_core.Block(c.config).double()
    m.load_state_dict({k: v.double() for k, v in c.params.items()})
    a = m.attn
    with torch.no_grad():
        q, k, _ = a.heads(m.attn_norm(c.x.double()))
        cos, sin = a.rope_tables(c.x.shape[1], torch.float64, "cpu")
        s = a.mask(a.scores(a.rope(q, cos, sin), a.expand_kv(a.rope(k, cos, sin))))
    row_max = s.max(dim=-1).values
    assert c.x.shape[1] == S.BACKWARD_T > 512 and float(row_max.median()) > 11.1  # exp(11.1) > fp16's max
    assert float(row_max.max()) < 100  # realistic, not extreme


@pytest.mark.parametrize("dtype", DTYPES)
def test_protocol_pins_have_several_rows_nonzero_mean_and_gamma_of_both_signs(dtype):
    c = S.RMSNORM_PROTOCOL_PIN.build(dtype)
    assert c.x.reshape(-1, c.x.shape[-1]).shape[0] >= 4 and float(c.x.double().mean()) > 0.2
    assert (c.weight > 0).any() and (c.weight < 0).any()
    g = S.RMSNORM_PROTOCOL_GRAD_PIN.build(dtype)
    assert g.grad_out.shape == g.case.x.shape and g.grad_out.dtype == dtype
    assert S.BLOCK_PROTOCOL_PIN.build(dtype).x.shape[:2] == (2, 3)
