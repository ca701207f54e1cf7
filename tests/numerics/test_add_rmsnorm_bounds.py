"""Empirical validation of the AddRMSNorm bounds (bounds.add_rmsnorm, add_rmsnorm_from_h, add_rmsnorm_vjp).

Over a grid of regimes — D ∈ {1, 3, 123, 769, 4096}; a branch x much smaller than the stream r, comparable, larger,
and cancelling it (x ≈ −r) — every accepted order stays under the bound: the reference (the norm reads the rounded
h, one rounding), the fused fp32 kernel (the norm reads the unrounded sum), vLLM / Liger "llama" (rounded h, x·r
rounded before ·w), fp64 maths of the exact sum rounded once; both undeclared and under the declaration that fits.
The two orders differ in 16-bit (measured), and wrong implementations exceed the bound.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import golden
from properties.numerics import bounds, ulp

DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.float64]
IDS = ["bf16", "fp16", "fp32", "fp64"]
EPS = 1e-6
BRANCHES = {"small": 2.0**-8, "comparable": 1.0, "large": 2.0**5, "cancelling": -1.0}


def _c(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _norm(s: torch.Tensor, w: torch.Tensor, dtype: torch.dtype, roundings: int = 1) -> torch.Tensor:
    c = _c(dtype)
    n = s.to(c) * torch.rsqrt(s.to(c).pow(2).mean(-1, keepdim=True) + EPS)
    return (n * w.to(c)).to(dtype) if roundings == 1 else w.to(dtype) * n.to(dtype)


ORDERS = {  # name: (norm input, the function (x, r, w) → y)
    "reference_rounded_h": ("rounded", lambda x, r, w: _norm(x + r, w, x.dtype)),
    "fused_sum_in_c": ("sum", lambda x, r, w: _norm(x.to(_c(x.dtype)) + r.to(_c(x.dtype)), w, x.dtype)),
    "vllm_rounded_h_two_roundings": ("rounded", lambda x, r, w: _norm(x + r, w, x.dtype, roundings=2)),
    "fp64_exact_sum_rounded_once": (
        "sum",
        lambda x, r, w: (
            (x.double() + r.double())
            / torch.sqrt((x.double() + r.double()).pow(2).mean(-1, keepdim=True) + EPS)
            * w.double()
        ).to(x.dtype),
    ),
}


def _regimes(dtype: torch.dtype):
    g = torch.Generator().manual_seed(17)
    for D in (1, 3, 123, 769, 4096):
        for branch, k in BRANCHES.items():
            r = torch.randn(5, D, generator=g, dtype=torch.float64) * 4 + 1.0  # the stream, non-zero mean
            noise = torch.randn(5, D, generator=g, dtype=torch.float64)
            x = -r + 2.0**-6 * noise if branch == "cancelling" else noise * k
            x[2] *= 1e-3  # one row where the branch is negligible
            r[3, 0] *= 40.0  # an outlier in the stream
            yield f"D={D},{branch}", x.to(dtype), r.to(dtype), D


def _gamma(D: int, dtype: torch.dtype) -> torch.Tensor:
    w = torch.rand(D, generator=torch.Generator().manual_seed(D), dtype=torch.float64) + 0.5
    w[:: max(1, D // 4)] *= -1
    return w.to(dtype)


def _room(out: torch.Tensor, g: golden.Golden, b: bounds.Bound) -> float:
    err = ulp.abs_error(out, g)
    judged = np.isfinite(b.abs)
    return float(np.max(np.where(judged, err / b.abs, 0.0), initial=0.0))


@functools.cache
def _measure(dtype: torch.dtype) -> dict[str, float]:
    """max error/bound over every regime, per order, undeclared (and "<order>/declared" under its declaration)."""
    worst: dict[str, float] = {}
    for _, x, r, D in _regimes(dtype):
        w = _gamma(D, dtype)
        gy, _ = golden.add_rmsnorm(x, r, w, EPS)
        by, _ = bounds.add_rmsnorm(x, r, w, EPS, dtype)
        for name, (reads, f) in ORDERS.items():
            y = f(x, r, w)
            with bounds.declared(bounds.Arithmetic(norm_input=reads)):
                by_declared, _ = bounds.add_rmsnorm(x, r, w, EPS, dtype)
            for key, b in ((name, by), (f"{name}/declared", by_declared)):
                worst[key] = max(worst.get(key, 0.0), _room(y, gy, b))
    return worst


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("order", list(ORDERS))
def test_the_y_bound_admits_every_accepted_order_declared_or_not(dtype: torch.dtype, order: str) -> None:
    worst = _measure(dtype)
    assert worst[order] <= 1.0, f"{order} exceeds the undeclared bound: error/bound = {worst[order]:.3f}"
    assert worst[f"{order}/declared"] <= 1.0, f"{order} exceeds its declared bound: {worst[f'{order}/declared']:.3f}"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_h_is_judged_correctly_rounded(dtype: torch.dtype) -> None:
    for _, x, r, D in _regimes(dtype):
        _, gh = golden.add_rmsnorm(x, r, _gamma(D, dtype), EPS)
        _, bh = bounds.add_rmsnorm(x, r, _gamma(D, dtype), EPS, dtype)
        assert bh.max_ulps == 0.5
        assert _room(x + r, gh, bh) <= 1.0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_the_bound_against_the_returned_h_admits_both_orders(dtype: torch.dtype) -> None:
    for where, x, r, D in _regimes(dtype):
        w = _gamma(D, dtype)
        h = x + r
        g = golden.rmsnorm(h, w, EPS)
        b = bounds.add_rmsnorm_from_h(h, w, EPS, dtype)
        for name, (_, f) in ORDERS.items():
            assert _room(f(x, r, w), g, b) <= 1.0, f"{name} [{where}]"
        with bounds.declared(bounds.Arithmetic(norm_input="rounded")):
            plain = bounds.add_rmsnorm_from_h(h, w, EPS, dtype)
        assert np.array_equal(plain.abs, bounds.rmsnorm(h, w, EPS, dtype).abs)  # declared: RMSNorm's own bound
        assert _room(ORDERS["reference_rounded_h"][1](x, r, w), g, plain) <= 1.0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_the_two_orders_differ_in_16_bit_and_the_declaration_sharpens_the_bound(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(5)
    r = (torch.randn(8, 4096, generator=g, dtype=torch.float64) * 4 + 1).to(dtype)
    x = (torch.randn(8, 4096, generator=g, dtype=torch.float64) * 2.0**-4).to(dtype)
    w = _gamma(4096, dtype)
    unfused, fused = (ORDERS[k][1](x, r, w) for k in ("reference_rounded_h", "fused_sum_in_c"))
    differ = float((unfused != fused).double().mean())
    print(f"\n{dtype}: the two orders differ on {differ:.1%} of the elements at D = 4096")
    assert differ > 0.01
    undeclared = bounds.add_rmsnorm_from_h(x + r, w, EPS, dtype)
    with bounds.declared(bounds.Arithmetic(norm_input="rounded")):
        declared = bounds.add_rmsnorm_from_h(x + r, w, EPS, dtype)
    assert np.all(declared.abs <= undeclared.abs) and np.any(declared.abs < undeclared.abs)


def _sum_of_squares_in_dtype(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = x + r
    s = torch.zeros(h.shape[:-1], dtype=h.dtype)
    for k in range(h.shape[-1]):  # a true 16-bit accumulator (torch's own reductions accumulate in fp32)
        s = s + h[..., k] * h[..., k]
    return (h.float() * torch.rsqrt(s.float() / h.shape[-1] + EPS)[..., None] * w.float()).to(h.dtype)


WRONG = {
    "norm_of_x": (lambda x, r, w: _norm(x, w, x.dtype), torch.float32, 64),
    "norm_of_r": (lambda x, r, w: _norm(r, w, x.dtype), torch.bfloat16, 64),
    "sum_of_squares_in_bf16": (_sum_of_squares_in_dtype, torch.bfloat16, 4096),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_add_rmsnorms_exceed_the_bound(name: str) -> None:
    f, dtype, D = WRONG[name]
    g = torch.Generator().manual_seed(3)
    r = (torch.randn(4, D, generator=g, dtype=torch.float64) * 4 + 1).to(dtype)
    x = (torch.randn(4, D, generator=g, dtype=torch.float64)).to(dtype)
    w = _gamma(D, dtype)
    gy, _ = golden.add_rmsnorm(x, r, w, EPS)
    assert _room(f(x, r, w), gy, bounds.add_rmsnorm(x, r, w, EPS, dtype)[0]) > 1.0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("order", ["reference_rounded_h", "fused_sum_in_c"])
def test_the_vjp_bound_admits_autograd_of_both_orders(dtype: torch.dtype, order: str) -> None:
    for where, x0, r0, D in _regimes(dtype):
        if D > 769:
            continue
        x, r = x0.clone().requires_grad_(True), r0.clone().requires_grad_(True)
        w = _gamma(D, dtype).requires_grad_(True)
        gen = torch.Generator().manual_seed(D)
        gy, gh = (torch.randn(x.shape, generator=gen, dtype=torch.float64).to(dtype) for _ in range(2))
        h = x + r
        y = ORDERS[order][1](x, r, w)
        dx, dr, dw = torch.autograd.grad((y, h), (x, r, w), (gy, gh))
        gd, gdw = golden.add_rmsnorm_vjp(x0, r0, w.detach(), EPS, gy, gh)
        bd, bdw = bounds.add_rmsnorm_vjp(x0, r0, w.detach(), EPS, gy, gh, dtype)
        for what, got, g, b in (("dx", dx, gd, bd), ("dr", dr, gd, bd), ("dw", dw, gdw, bdw)):
            assert _room(got, g, b) <= 1.0, f"{what} [{where}]"
