"""golden.add_rmsnorm / add_rmsnorm_vjp: the norm of the exact sum, the sum itself, and their VJP — fast path vs
plain mpmath, a worked example, a sum that no float64 holds, fp64 autograd, bad shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import golden

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
IDS = ["fp64", "fp32", "fp16", "bf16"]


def _case(dtype: torch.dtype, seed: int = 3, shape: tuple[int, ...] = (3, 37)):
    g = torch.Generator().manual_seed(seed)

    def r(scale: float, mean: float = 0.0) -> torch.Tensor:
        return (torch.randn(shape, generator=g, dtype=torch.float64) * scale + mean).to(dtype)

    w = torch.linspace(-1.5, 2.0, shape[-1], dtype=torch.float64).to(dtype)
    return r(1e-2), r(8.0, 1.0), w, r(1.0), r(1.0)  # a small branch on a larger stream; two cotangents


def test_worked_example() -> None:
    """x = (1, 2), r = (2, 2): h = (3, 4), rms = 5/√2, y = (3, 4)·√2/5."""
    y, h = golden.add_rmsnorm(torch.tensor([1.0, 2.0]), torch.tensor([2.0, 2.0]), torch.ones(2), 0.0)
    assert h.float64().tolist() == [3.0, 4.0]
    assert y.float64() == pytest.approx([3 * math.sqrt(2) / 5, 4 * math.sqrt(2) / 5], rel=1e-15)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_fast_path_agrees_with_mpmath(dtype: torch.dtype) -> None:
    x, r, w, gy, gh = _case(dtype)
    outs = [
        *golden.add_rmsnorm(x, r, w, 1e-6, validate="full"),
        *golden.add_rmsnorm_vjp(x, r, w, 1e-6, gy, gh, validate="full"),
    ]
    assert all(o.info["method"] == "fast" and o.info["full_check_rel"] <= 2.0**-100 for o in outs)
    assert [o.shape for o in outs] == [(3, 37), (3, 37), (3, 37), (37,)]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_h_rounds_to_the_correctly_rounded_sum(dtype: torch.dtype) -> None:
    x, r, w, _, _ = _case(dtype)
    _, h = golden.add_rmsnorm(x, r, w, 1e-6)
    assert torch.equal(h.rounded(dtype), (x.double() + r.double()).to(dtype))  # fp64 holds 16/32-bit sums' rounding


def test_a_sum_no_float64_holds_is_kept_exactly() -> None:
    """1 + 2^-80 is not a float64: h keeps it as hi + lo, and y is the norm of the exact sum (mpmath agrees)."""
    x = torch.tensor([[1.0, -3.0, 0.5]], dtype=torch.float64)
    r = torch.tensor([[2.0**-80, 2.0**-70, -(2.0**-75)]], dtype=torch.float64)
    y, h = golden.add_rmsnorm(x, r, torch.ones(3, dtype=torch.float64), 1e-6, validate="full")
    assert h.hi.tolist() == [[1.0, -3.0, 0.5]] and h.lo.tolist() == [[2.0**-80, 2.0**-70, -(2.0**-75)]]
    assert y.info["full_check_rel"] <= 2.0**-100


def test_the_vjp_matches_fp64_autograd_and_is_one_gradient_for_both_inputs() -> None:
    x, r, w, gy, gh = (t.requires_grad_(True) if i < 3 else t for i, t in enumerate(_case(torch.float64, seed=6)))
    h = x + r
    y = h / torch.sqrt((h**2).mean(-1, keepdim=True) + 1e-6) * w
    torch.autograd.backward((y, h), (gy, gh))
    d, dw = golden.add_rmsnorm_vjp(x, r, w, 1e-6, gy, gh)
    np.testing.assert_allclose(d.float64(), x.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d.float64(), r.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dw.float64(), w.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_mpmath_method_gives_the_same_rounded_values() -> None:
    x, r, w, gy, gh = _case(torch.float32, seed=9)
    fast = [*golden.add_rmsnorm(x, r, w, 1e-5), *golden.add_rmsnorm_vjp(x, r, w, 1e-5, gy, gh)]
    slow = [
        *golden.add_rmsnorm(x, r, w, 1e-5, method="mpmath"),
        *golden.add_rmsnorm_vjp(x, r, w, 1e-5, gy, gh, method="mpmath"),
    ]
    for a, b in zip(fast, slow, strict=True):
        assert b.info["method"] == "mpmath"
        assert torch.equal(a.rounded(torch.float64), b.rounded(torch.float64))


def test_bad_shapes_are_rejected_naming_the_argument() -> None:
    x, r, w, gy, gh = _case(torch.float32)
    with pytest.raises(ValueError, match=r"golden.add_rmsnorm: residual shape \(3, 36\) != x shape \(3, 37\)"):
        golden.add_rmsnorm(x, r[:, 1:], w, 1e-6)
    with pytest.raises(ValueError, match="golden.add_rmsnorm: weight shape"):
        golden.add_rmsnorm(x, r, w[1:], 1e-6)
    with pytest.raises(ValueError, match="golden.add_rmsnorm_vjp: grad_out shape"):
        golden.add_rmsnorm_vjp(x, r, w, 1e-6, gy[:1], gh)


def test_nonfinite_inputs_give_an_uncertified_float64_value() -> None:
    x, r, w, _, _ = _case(torch.float32)
    x[0, 0] = float("inf")
    y, h = golden.add_rmsnorm(x, r, w, 1e-6)
    assert not y.info["certified"] and np.isinf(h.hi[0, 0])
    assert np.isnan(y.hi[0, 0]) and (y.hi[0, 1:] == 0).all()  # the float64 formula: inf/inf, finite/inf
