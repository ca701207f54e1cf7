"""The invariant laws' bounds (the very functions the laws call) admit every accepted convention and reduction order,
and a wrong implementation exceeds them.

Conventions: the reference, torch ``F.rms_norm``, HF-Llama's two roundings, and the sequential and 8-lane Σx² of
``orders`` (a compiled kernel's order) on adversarial rows (constant, one sign, a ramp, an outlier, mixed scales),
D up to 4096; SwiGLU in the reference and HF conventions with random weights; the Block derivative allowances
against the ``torch`` adapter's Block (SDPA attention, another order).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import golden
import nanolm_core
from golden import dd
from golden.formats import FORMATS
from properties.adapters import torch_ref
from properties.numerics import bounds, ulp
from tests.common.cases import adversarial_rows, block_case, hf_llama_rmsnorm
from tests.numerics import orders

DTYPES = [f.dtype for f in reversed(FORMATS)]
IDS = [f.name for f in reversed(FORMATS)]
EPS = 1e-6
DIMS = (3, 760, 4096)


def _f64(t: torch.Tensor | np.ndarray) -> np.ndarray:
    return t.detach().double().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, dtype=np.float64)


def _within(actual, expected, b: bounds.Bound) -> float:
    """max |actual − expected| / b.abs over the judged elements; a non-finite value is an infinite ratio."""
    a, e = _f64(actual), _f64(expected)
    with np.errstate(all="ignore"):
        d = np.where(np.isfinite(a) & np.isfinite(e), np.abs(a - e), np.inf)
        judged = np.isfinite(b.abs) & (d > 0)
        return float(np.max(np.where(judged, d / b.abs, 0.0), initial=0.0))


def _rms_conventions(dtype: torch.dtype) -> dict:
    def ref(x, w):
        m = nanolm_core.RMSNorm(x.shape[-1], EPS).to(dtype)
        with torch.no_grad():
            m.weight.copy_(w)
            return m(x)

    def emulated(order):
        return lambda x, w: torch.from_numpy(orders.rmsnorm(_f64(x), _f64(w), EPS, dtype, order)).to(dtype)

    out = {
        "reference": ref,
        "F.rms_norm": lambda x, w: F.rms_norm(x, (x.shape[-1],), w, EPS),
        "sequential Σx²": emulated("sequential"),
        "8-lane Σx²": emulated("lanes8"),
    }
    if dtype != torch.float64:
        out["HF two roundings"] = lambda x, w: hf_llama_rmsnorm(x, w, EPS)
    return out


def _cases(dtype: torch.dtype, gamma: str = "signed"):
    for D in DIMS:
        x = torch.from_numpy(adversarial_rows(D, dtype)).to(dtype)
        rng = np.random.default_rng(D)
        w = rng.uniform(0.25, 2.0, D) * (rng.choice((-1.0, 1.0), D) if gamma == "signed" else 1.0)
        yield x, torch.from_numpy(w if gamma != "ones" else np.ones(D)).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_norm_bound_admits_every_convention_and_order(dtype: torch.dtype) -> None:
    for x, w in _cases(dtype, "ones"):
        b = bounds.rmsnorm_norm(x, EPS, dtype)
        x64 = _f64(x)
        ms = (x64 * x64).mean(-1)
        radius = np.sqrt(x.shape[-1] * ms / (ms + EPS))
        for name, f in _rms_conventions(dtype).items():
            assert _within(np.linalg.norm(_f64(f(x, w)), axis=-1), radius, b) <= 1.0, name
    wrong = x.double() / x.double().norm(dim=-1, keepdim=True)  # forgets 1/D: on the unit sphere
    assert _within(wrong.norm(dim=-1), radius, bounds.rmsnorm_norm(x, EPS, dtype)) > 1.0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_scale_invariance_bound_admits_every_convention(dtype: torch.dtype) -> None:
    k = 6 if dtype != torch.float16 else 3
    for x, w in _cases(dtype):
        x = x.clamp(-(2.0**10), 2.0**10)
        xa = (x.double() * 2.0**k).to(dtype)
        b = bounds.rmsnorm_scale_invariance(x, w, EPS, k, dtype)
        for name, f in _rms_conventions(dtype).items():
            assert _within(f(xa, w), f(x, w), b) <= 1.0, name
    x = (torch.randn(2, 64, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 1e-2).to(dtype)
    ones = torch.ones(64, dtype=dtype)

    def wrong(t: torch.Tensor) -> torch.Tensor:  # an rms clamped from below (a "safe" divide): not scale invariant
        rms = t.double().pow(2).mean(-1, keepdim=True).sqrt()
        return (t.double() / rms.clamp_min(0.1)).to(dtype)

    b = bounds.rmsnorm_scale_invariance(x, ones, EPS, k, dtype)
    assert _within(wrong((x.double() * 2.0**k).to(dtype)), wrong(x), b) > 1.0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_gamma_scaling_bound_admits_every_convention(dtype: torch.dtype) -> None:
    for x, w in _cases(dtype):
        b = bounds.rmsnorm_gamma_scaling(x, w, EPS, dtype)
        for name, f in _rms_conventions(dtype).items():
            assert _within(f(x, w), _f64(f(x, torch.ones_like(w))) * _f64(w), b) <= 1.0, name
        forgot = F.rms_norm(x, (x.shape[-1],), None, EPS)
        assert _within(forgot, _f64(forgot) * _f64(w), b) > 1.0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_row_sum_bound_admits_every_convention(dtype: torch.dtype) -> None:
    for x, w in _cases(dtype, "ones"):
        x64 = _f64(x)
        expected = x64.sum(-1) / np.sqrt((x64 * x64).mean(-1) + EPS)
        b = bounds.rmsnorm_row_sum(x, EPS, dtype)
        for name, f in _rms_conventions(dtype).items():
            assert _within(_f64(f(x, w)).sum(-1), expected, b) <= 1.0, name
        centred = F.layer_norm(x.double(), (x.shape[-1],), eps=EPS)  # subtracts the mean
        assert _within(centred.sum(-1), expected, b) > 1.0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_two_results_each_within_the_bound_are_within_between(dtype: torch.dtype) -> None:
    """Row independence / confinement compare two results: any two conventions differ by ≤ between(b)."""
    for x, w in _cases(dtype):
        b = bounds.between(bounds.rmsnorm(x, w, EPS, dtype))
        outs = [f(x, w) for f in _rms_conventions(dtype).values()]
        assert max(_within(a, c, b) for a in outs for c in outs) <= 1.0
        whole = (x.double() / x.double().pow(2).mean().sqrt() * w.double()).to(dtype)  # one rms for all rows
        assert _within(whole, outs[0], b) > 1.0


def test_rmsnorm_drift_bound_admits_the_conventions_and_catches_bf16_accumulation() -> None:
    for x, w in _cases(torch.bfloat16):
        b = bounds.rmsnorm_drift(x, w, EPS)
        for name, f in _rms_conventions(torch.bfloat16).items():
            y32 = _rms_conventions(torch.float32)["reference"](x.float(), w.float())
            assert _within(f(x, w), y32, b) <= 1.0, name
    x = torch.from_numpy(adversarial_rows(4096, torch.bfloat16)[2:4]).to(torch.bfloat16)
    w = torch.ones(4096, dtype=torch.bfloat16)
    S = np.zeros(2, np.float32)
    for k in range(4096):  # Σx² accumulated in bf16
        S = orders.to_t(S + orders.to_t(_f64(x)[:, k] ** 2, torch.bfloat16), torch.bfloat16)
    y = orders.to_t(_f64(x).astype(np.float32) / np.sqrt(S[:, None] / 4096 + EPS), torch.bfloat16)
    assert _within(y, F.rms_norm(x.float(), (4096,), w.float(), EPS), bounds.rmsnorm_drift(x, w, EPS)) > 1.0


# -------------------------------------------------------------------------------------------- SwiGLU
def _swiglu_args(dtype: torch.dtype, D: int = 96, F_: int = 256, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.from_numpy(np.clip(adversarial_rows(D, dtype), -8, 8)).to(dtype)
    ws = [torch.randn(s, generator=g, dtype=torch.float64) / s[1] ** 0.5 for s in ((F_, D), (F_, D), (D, F_))]
    return x, *(w.to(dtype) for w in ws)


def _swiglu_conventions(dtype: torch.dtype):
    def ref(x, wg, wu, wd):
        m = nanolm_core.SwiGLU(wg.shape[1], wg.shape[0]).to(dtype)
        m.load_state_dict({"w_gate.weight": wg, "w_up.weight": wu, "w_down.weight": wd})
        with torch.no_grad():
            return m(x)

    def fused(x, wg, wu, wd):
        c = torch.float64 if dtype == torch.float64 else torch.float32
        x, wg, wu, wd = (t.to(c) for t in (x, wg, wu, wd))
        return ((F.silu(x @ wg.T) * (x @ wu.T)) @ wd.T).to(dtype)

    def sequential(x, wg, wu, wd):
        return torch.from_numpy(orders.swiglu(*(_f64(t) for t in (x, wg, wu, wd)), dtype, "sequential")[1]).to(dtype)

    return {"reference": ref, "fused": fused, "sequential (HF)": sequential}


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_swiglu_between_bound_admits_a_permutation_of_the_hidden_units(dtype: torch.dtype) -> None:
    x, wg, wu, wd = _swiglu_args(dtype)
    perm = torch.randperm(wg.shape[0], generator=torch.Generator().manual_seed(2))
    b = bounds.between(bounds.swiglu(x, wg, wu, wd, dtype, random_weights=True))
    for name, f in _swiglu_conventions(dtype).items():
        assert _within(f(x, wg[perm], wu[perm], wd[:, perm]), f(x, wg, wu, wd), b) <= 1.0, name
    scaled = (1 + torch.arange(wg.shape[0], dtype=torch.float64) / wg.shape[0]).to(dtype)
    assert _within(f(x, wg, wu, wd * scaled), f(x, wg, wu, wd), b) > 1.0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_swiglu_linearity_bound_admits_the_conventions(dtype: torch.dtype) -> None:
    x, wg, wu, wd = _swiglu_args(dtype)
    w1 = (torch.randn(wd.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64) / 16).to(dtype)
    w2 = (wd.double() - w1.double()).to(dtype)
    b = bounds.swiglu_linearity(x, wg, wu, wd, w1, w2, dtype)
    for name, f in _swiglu_conventions(dtype).items():
        assert _within(f(x, wg, wu, wd), _f64(f(x, wg, wu, w1)) + _f64(f(x, wg, wu, w2)), b) <= 1.0, name
    leaky = [torch.where(y > 0, y, 0.5 * y) for y in (f(x, wg, wu, w) for w in (wd, w1, w2))]
    assert _within(leaky[0], _f64(leaky[1]) + _f64(leaky[2]), b) > 1.0


def test_swiglu_drift_bound_admits_the_conventions_and_catches_a_truncated_hidden_state() -> None:
    x, wg, wu, wd = _swiglu_args(torch.bfloat16, F_=8)
    b = bounds.swiglu_drift(x, wg, wu, wd)
    y32 = _swiglu_conventions(torch.float32)["reference"](*(t.float() for t in (x, wg, wu, wd)))
    for name, f in _swiglu_conventions(torch.bfloat16).items():
        assert _within(f(x, wg, wu, wd), y32, b) <= 1.0, name
    h = F.silu(F.linear(x, wg)) * F.linear(x, wu)
    h = (h.view(torch.int16) & ~0x7).view(torch.bfloat16)  # 4 mantissa bits
    assert _within(F.linear(h, wd), y32, b) > 1.0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_silu_gate_bound_admits_torch_for_every_value_and_catches_cancellation(dtype: torch.dtype) -> None:
    bits = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    x = bits[torch.isfinite(bits)]
    s = golden.silu(x)
    prod = dd.mul_d(dd.DD(np.asarray(s.hi), np.asarray(s.lo)), _f64(x))
    gold = golden.Golden(np.asarray(prod.hi), np.asarray(prod.lo))
    b = bounds.silu_gate(x, dtype)

    def ratio(y: torch.Tensor) -> float:
        err = ulp.abs_error(y, gold)
        return float(np.max(np.where(err > 0, err / b.abs, 0.0)))

    assert ratio(F.silu(x) * x) <= 1.0
    assert ratio(x * torch.sigmoid(x) * x) <= 1.0
    assert ratio(x * (1 - torch.sigmoid(-x)) * x) > 1.0  # skyzh/tiny-llm#164


# --------------------------------------------------------------------------------------------- Block
def _vjp(module: torch.nn.Module, x: torch.Tensor, v: torch.Tensor) -> np.ndarray:
    x = x.detach().clone().requires_grad_(True)
    (dx,) = torch.autograd.grad(module(x), [x], v)
    return _f64(dx)


def _pair(cfg, sd, dtype, cls=nanolm_core.Block):
    m = cls(cfg).to(dtype)
    m.load_state_dict({k: v.to(dtype) for k, v in sd.items()})
    return m


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_block_vjp_allowance_admits_another_attention_order(dtype: torch.dtype) -> None:
    """The torch adapter (SDPA attention, RoPE in its own order) against the fp64 reference derivative."""
    blk, cfg, x = block_case(dtype, 32, 4, 2, 5, 1.0, seed=4)
    sd = {k: v.double() for k, v in blk.state_dict().items()}
    v = torch.randn(x.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(dtype)
    exact = _vjp(_pair(cfg, sd, torch.float64), x.double(), v.double())
    ref = _vjp(_pair(cfg, sd, dtype), x, v)
    b = bounds.block_vjp([ref], exact, cfg, x.shape[1], dtype)
    assert _within(_vjp(_pair(cfg, sd, dtype, torch_ref.Block), x, v), exact, b) <= 1.0
    detached = _pair(cfg, sd, dtype)
    detached.attn_norm.forward = lambda t, f=detached.attn_norm.forward: f(t.detach())  # branch input detached
    assert _within(_vjp(detached, x, v), exact, b) > 1.0


def test_block_depth_allowance_admits_the_torch_adapter_and_catches_post_norm() -> None:
    dtype = torch.float32
    blk, cfg, x = block_case(dtype, 32, 4, 2, 3, 1.0, seed=5)
    sd = {k: v.double() * (0.125 if "norm" not in k else 1.0) for k, v in blk.state_dict().items()}
    x = x * 4 / x.double().square().mean().sqrt().float()
    v = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))

    def ratio(cls, t):
        stack = torch.nn.Sequential(*(_pair(cfg, sd, t, cls) for _ in range(4)))
        return float(np.linalg.norm(_vjp(stack, x.to(t), v.to(t))) / v.double().norm())

    exact, ref = ratio(nanolm_core.Block, torch.float64), ratio(nanolm_core.Block, dtype)
    b = bounds.block_depth_ratio([ref], exact, cfg, x.shape[1], 4, dtype)
    assert _within(np.array([ratio(torch_ref.Block, dtype)]), np.array([exact]), b) <= 1.0
    assert _within(np.array([ratio(nanolm_core.PostNormBlock, dtype)]), np.array([exact]), b) > 1.0
