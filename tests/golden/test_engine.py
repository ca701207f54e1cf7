"""The golden engine: worked examples, fast path vs plain mpmath, self-validation, isolation, timeouts."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch

import golden
from golden import dd, definitions, fast
from golden.formats import FORMATS, NAMES
from nanolm_core import Block, ModelConfig

DTYPES = [f.dtype for f in FORMATS]
IDS = list(NAMES)


def _ctx(prec: int = 200):
    c = mpmath.MPContext()
    c.prec = prec
    return c


# -------------------------------------------------------------------------------- worked examples
def test_rmsnorm_worked_example() -> None:
    g = golden.rmsnorm(torch.tensor([3.0, 4.0]), torch.ones(2), 0.0)
    # rms = √((9 + 16)/2) = 5/√2, so y = (3, 4)·√2/5 = (0.8485…, 1.1314…)
    assert g.float64() == pytest.approx([3 * math.sqrt(2) / 5, 4 * math.sqrt(2) / 5], rel=1e-15)
    assert round(float(g.hi[0]), 4) == 0.8485 and round(float(g.hi[1]), 4) == 1.1314


def test_swiglu_worked_example() -> None:
    """value (3, 3), gate (2, −2): silu(2)·3 = 5.28…, silu(−2)·3 = −0.72… (W_down = I)."""
    x = torch.tensor([[1.0, 0.0]])
    g = golden.swiglu(x, torch.tensor([[2.0, 0.0], [-2.0, 0.0]]), torch.tensor([[3.0, 0.0], [3.0, 0.0]]), torch.eye(2))
    assert g.float64()[0] == pytest.approx([5.28478247, -0.71521753], abs=1e-8)
    assert round(float(g.hi[0, 0]), 2) == 5.28 and round(float(g.hi[0, 1]), 2) == -0.72


def test_swish_of_two() -> None:
    assert round(float(golden.silu(torch.tensor(2.0)).hi), 2) == 1.76
    assert float(golden.silu(torch.tensor(2.0)).hi) == pytest.approx(2 / (1 + math.exp(-2)), rel=1e-15)


# ------------------------------------------------------------------- fast path vs plain mpmath
def _cases():
    g = torch.Generator().manual_seed(1)

    def r(*shape, scale=1.0, mean=0.0):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * scale + mean

    return {
        "rmsnorm": lambda dt: golden.rmsnorm(
            r(3, 37, scale=1e-3, mean=5e-4).to(dt), r(37).to(dt), 1e-6, validate="full"
        ),
        "rmsnorm_outlier": lambda dt: golden.rmsnorm(
            torch.cat([r(1, 16), torch.tensor([[1e3] + [1e-3] * 15], dtype=torch.float64)]).to(dt),
            r(16).to(dt),
            1e-5,
            validate="full",
        ),
        "layernorm": lambda dt: golden.layernorm(
            r(2, 19, mean=30.0).to(dt), r(19).to(dt), r(19).to(dt), 1e-5, validate="full"
        ),
        "silu": lambda dt: golden.silu(
            torch.cat([r(64, scale=20.0), torch.tensor([0.0, -700.0, 80.0, 1e-30], dtype=torch.float64)]).to(dt),
            validate="full",
        ),
        "swiglu": lambda dt: golden.swiglu(
            r(3, 24, mean=0.5).to(dt),
            r(40, 24, scale=0.3).to(dt),
            r(40, 24, scale=0.3).to(dt),
            r(24, 40, scale=0.2).to(dt),
            validate="full",
        ),
        "swiglu_one_row": lambda dt: golden.swiglu(
            r(24).to(dt), r(40, 24).to(dt), r(40, 24).to(dt), r(24, 40).to(dt), validate="full"
        ),
    }


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", list(_cases()))
def test_fast_path_agrees_with_mpmath(case: str, dtype: torch.dtype) -> None:
    g = _cases()[case](dtype)
    assert g.info["method"] == "fast"
    assert g.info["full_check_rel"] <= 2.0**-100  # recomputed by plain mpmath at 192 bits
    assert g.info["sum_bound_rel"] <= 2.0**-100


def _block_case(dtype: torch.dtype, G: int = 2, T: int = 5):
    torch.manual_seed(3)
    cfg = ModelConfig(dim=16, n_heads=4, n_kv_heads=G, ffn_dim=24)
    blk = Block(cfg)
    with torch.no_grad():
        for p in blk.parameters():
            p.copy_(torch.randn_like(p) * (0.4 if p.dim() > 1 else 1.0))
    blk = blk.to(dtype)
    return blk, cfg, torch.randn(2, T, 16).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["fp64", "bf16"])
def test_block_fast_path_agrees_with_mpmath(dtype: torch.dtype) -> None:
    blk, cfg, x = _block_case(dtype)
    g = golden.block(x, blk.state_dict(), cfg, validate="full")
    assert g.info["full_check_rel"] <= 2.0**-100


def test_attention_fast_path_agrees_with_mpmath() -> None:
    blk, cfg, x = _block_case(torch.float32, G=1, T=6)
    sd = blk.state_dict()
    g = golden.attention(x, *(sd[f"attn.{n}.weight"] for n in ("wq", "wk", "wv", "wo")), cfg, validate="full")
    assert g.info["full_check_rel"] <= 2.0**-100


def test_block_matches_the_fp64_reference_to_fp64_accuracy() -> None:
    blk, cfg, x = _block_case(torch.float64, G=2, T=7)
    g = golden.block(x, blk.state_dict(), cfg)
    with torch.no_grad():
        ref = blk(x).numpy()
    assert np.max(np.abs(ref - g.float64()) / (np.abs(g.float64()) + 1)) < 1e-13


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
def test_vjps_agree_with_mpmath(dtype: torch.dtype) -> None:
    torch.manual_seed(5)
    x, w, gy = torch.randn(3, 12).to(dtype), torch.randn(12).to(dtype), torch.randn(3, 12).to(dtype)
    for g in golden.rmsnorm_vjp(x, w, 1e-6, gy, validate="full"):
        assert g.info["full_check_rel"] <= 2.0**-100
    wg, wu, wd = torch.randn(20, 12).to(dtype), torch.randn(20, 12).to(dtype), torch.randn(12, 20).to(dtype)
    outs = golden.swiglu_vjp(x, wg, wu, wd, gy, validate="full")
    assert [o.shape for o in outs] == [(3, 12), (20, 12), (20, 12), (12, 20)]
    assert all(o.info["full_check_rel"] <= 2.0**-100 for o in outs)


def test_vjps_match_fp64_autograd() -> None:
    torch.manual_seed(6)
    x = torch.randn(2, 3, 10, dtype=torch.float64, requires_grad=True)
    w = torch.randn(10, dtype=torch.float64, requires_grad=True)
    gy = torch.randn(2, 3, 10, dtype=torch.float64)
    y = x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-6) * w
    y.backward(gy)
    dx, dw = golden.rmsnorm_vjp(x, w, 1e-6, gy)
    np.testing.assert_allclose(dx.float64(), x.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dw.float64(), w.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_rounded_is_the_correct_rounding_of_the_mpmath_value() -> None:
    x = torch.randn(4, 33, dtype=torch.float64) * 7
    w = torch.randn(33, dtype=torch.float64)
    g = golden.rmsnorm(x, w, 1e-6)
    m = golden.rmsnorm(x, w, 1e-6, method="mpmath")
    for dt in DTYPES:
        assert torch.equal(g.rounded(dt), m.rounded(dt))


# -------------------------------------------------------------------------------- primitives
@pytest.mark.parametrize("kind", ["cancel", "huge_range", "ones_and_big", "random", "zeros", "single"])
def test_acc_sum_is_exact_to_the_last_bit(kind: str) -> None:
    rng = np.random.default_rng(7)
    rows = {
        "cancel": np.concatenate([a := rng.standard_normal(500) * 1e10, -a, [1e-20, 3e-25]]),
        "huge_range": rng.standard_normal(777) * np.exp2(rng.integers(-400, 400, 777)),
        "ones_and_big": np.array([2.0**60] + [1.0] * 1000 + [-(2.0**60)]),
        "random": rng.standard_normal(4096),
        "zeros": np.zeros(9),
        "single": np.array([math.pi]),
    }[kind]
    s, bound = dd.acc_sum(rows[None, :])
    hi = math.fsum(rows)
    lo = math.fsum(np.concatenate([rows, [-hi]]))
    c = _ctx(2000)
    exact = c.fsum(c.mpf(v) for v in rows)
    err = abs(c.mpf(s.hi[0]) + c.mpf(s.lo[0]) - exact)
    assert err <= c.mpf(bound[0]) * (1 + 1e-12) + c.mpf(2) ** -1070
    assert s.hi[0] == hi and (abs(s.lo[0] - lo) <= abs(lo) * 2.0**-50)


def test_dd_exp_is_accurate_to_2_pow_minus_100() -> None:
    rng = np.random.default_rng(8)
    # results below 2^-960 lose the DD tail to underflow (documented); e^-660 ≈ 2^-952
    z = np.concatenate([rng.uniform(-660, 709, 400), rng.uniform(-1, 1, 200), [0.0, 1e-300, -1e-300, 709.7]])
    lo = z * 1e-17
    e = dd.exp(dd.DD(z, lo))
    c = _ctx(240)
    worst = max(
        abs((c.mpf(h) + c.mpf(l)) / c.exp(c.mpf(a) + c.mpf(b)) - 1)
        for h, l, a, b in zip(e.hi, e.lo, z, lo, strict=True)
    )
    assert worst <= c.mpf(2) ** -100


# ----------------------------------------------------------------------- isolation and guards
def test_global_mpmath_context_is_untouched() -> None:
    before = (mpmath.mp.prec, mpmath.mp.dps)
    golden.swiglu(torch.randn(2, 4), torch.randn(6, 4), torch.randn(6, 4), torch.randn(4, 6), method="mpmath")
    golden.rmsnorm(torch.randn(2, 4), torch.ones(4), 1e-6, validate="full")
    assert (mpmath.mp.prec, mpmath.mp.dps) == before


def test_inputs_are_not_mutated() -> None:
    x, wg, wu, wd = torch.randn(3, 8), torch.randn(5, 8), torch.randn(5, 8), torch.randn(8, 5)
    copies = [t.clone() for t in (x, wg, wu, wd)]
    golden.swiglu(x, wg, wu, wd)
    golden.swiglu_vjp(x, wg, wu, wd, torch.randn(3, 8))
    assert all(torch.equal(a, b) for a, b in zip((x, wg, wu, wd), copies, strict=True))


def test_slow_evaluation_times_out_with_a_clear_error() -> None:
    with pytest.raises(golden.GoldenTimeoutError, match="time budget"):
        golden.swiglu(
            torch.randn(4, 256),
            torch.randn(768, 256),
            torch.randn(768, 256),
            torch.randn(256, 768),
            method="mpmath",
            timeout=0.2,
        )


def test_a_wrong_dd_kernel_is_caught_by_self_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    real = dd.exp
    monkeypatch.setattr(fast.dd, "exp", lambda a: dd.DD(*dd.fast_two_sum(real(a).hi, real(a).hi * 2.0**-90)))
    with pytest.raises(golden.GoldenPrecisionError, match="exp"):
        golden.silu(torch.randn(10))


def test_mpmath_recomputation_disagreement_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mpmath evaluator compares prec and prec + 64 bits: an evaluation that depends on the precision fails."""
    orig = definitions.silu

    def flaky(ctx, z):
        return orig(ctx, z) * (1 + ctx.ldexp(1, -ctx.prec + 40))

    monkeypatch.setattr(definitions, "silu", flaky)
    with pytest.raises(golden.GoldenPrecisionError, match="disagrees"):
        golden.silu(torch.randn(4), method="mpmath")


def test_bad_shapes_and_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="weight shape"):
        golden.rmsnorm(torch.randn(2, 4), torch.ones(5), 1e-6)
    with pytest.raises(ValueError, match="w_down"):
        golden.swiglu(torch.randn(2, 4), torch.randn(6, 4), torch.randn(6, 4), torch.randn(6, 4))
    with pytest.raises(ValueError, match="prec"):
        golden.silu(torch.randn(2), prec=64)
    with pytest.raises(KeyError, match="attn.wq.weight"):
        golden.block(torch.randn(1, 2, 16), {}, ModelConfig(dim=16, n_heads=4, n_kv_heads=2))


def test_nonfinite_inputs_give_an_uncertified_float64_value() -> None:
    g = golden.rmsnorm(torch.tensor([[1.0, float("inf")]]), torch.ones(2), 1e-6)
    assert g.info["certified"] is False and np.isnan(g.hi).any()
    zero_row = golden.rmsnorm(torch.zeros(1, 4), torch.ones(4), 0.0)
    assert np.isnan(zero_row.hi).all()  # 0/0: the definition has no value
    assert np.array_equal(golden.rmsnorm(torch.zeros(1, 4), torch.ones(4), 1e-6).hi, np.zeros((1, 4)))


# --------------------------------------------------------------------------------- structure and paths
def test_the_definitions_are_plain_mpmath_on_a_worked_example() -> None:
    """golden.definitions evaluates the maths in the context it is given: RMSNorm of (3, 4) is (3, 4)·√2/5."""
    ctx = mpmath.MPContext()
    ctx.prec = 200
    y = definitions.rmsnorm(ctx, np.array([[ctx.mpf(3), ctx.mpf(4)]], dtype=object), np.array([1, 1]), 0.0)
    assert abs(y[0, 0] - 3 * ctx.sqrt(2) / 5) < ctx.mpf(2) ** -190
    assert abs(y[0, 1] - 4 * ctx.sqrt(2) / 5) < ctx.mpf(2) ** -190
    source = open(definitions.__file__, encoding="utf-8").read()
    assert "import golden" not in source and "from golden" not in source  # maths only: no framework, no fast path


def test_long_sequences_are_chunked_without_changing_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    blk, cfg, x = _block_case(torch.float32, G=2, T=7)
    sd = blk.state_dict()
    whole = golden.block(x, sd, cfg)
    monkeypatch.setattr(fast, "_ATTENTION_BUDGET", 1)  # one query position per chunk
    chunked = golden.block(x, sd, cfg, validate="full")
    assert chunked.info["full_check_rel"] <= 2.0**-100
    assert np.all(np.abs((chunked.hi - whole.hi) + (chunked.lo - whole.lo)) <= 2.0**-100 * np.abs(whole.hi))


def test_vjps_honour_method_mpmath() -> None:
    torch.manual_seed(7)
    x, w, gy = torch.randn(2, 6, dtype=torch.float64), torch.randn(6, dtype=torch.float64), torch.randn(2, 6)
    by_mpmath = golden.rmsnorm_vjp(x, w, 1e-6, gy, method="mpmath")
    by_fast = golden.rmsnorm_vjp(x, w, 1e-6, gy)
    for m, f in zip(by_mpmath, by_fast, strict=True):
        assert m.info["method"] == "mpmath" and f.info["method"] == "fast"
        assert np.all(np.abs((m.hi - f.hi) + (m.lo - f.lo)) <= 2.0**-100 * np.maximum(np.abs(f.hi), 1e-300))
    wg, wu, wd = torch.randn(5, 6), torch.randn(5, 6), torch.randn(6, 5)
    outs = golden.swiglu_vjp(x.float(), wg, wu, wd, gy.float(), method="mpmath")
    assert [o.info["method"] for o in outs] == ["mpmath"] * 4 and outs[1].shape == (5, 6)
