"""Laws of RMSNorm: y = x / √(mean(x², −1) + eps) ⊙ γ, for x of shape (..., D) and γ of shape (D,).

Each law's docstring is the law. Bounds come from properties.bounds (per element, derived from the unit
roundoff of the dtypes and D) or are bitwise where the law is exact in floating point.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from properties.library import strategies as S
from properties.library.assertions import (
    as_f64,
    assert_bitwise_equal,
    assert_close,
    assert_finite,
    assert_matches_golden,
    assert_unchanged,
    fail,
)
from properties.library.context import NotApplicable, measure
from properties.library.harness import backward, build_rmsnorm, call, gradcheck, note, rmsnorm_forward
from properties.library.oracle import bound_rmsnorm, golden_module, golden_rmsnorm, rmsnorm_vjp_bounds
from properties.library.subject import Implementation
from properties.library.table import law

DType = torch.dtype
Data = st.DataObject


PINS = S.RMSNORM_PINS
U64 = 2.0**-53


def _rows(t: torch.Tensor) -> np.ndarray:
    return as_f64(t).reshape(-1, t.shape[-1])


@law("RMSNorm", cost=2)
@given(data=st.data())
@example(data=PINS["zero row"])
@example(data=PINS["one huge outlier"])
@example(data=PINS["eps-dominated"])
@example(data=PINS["subnormal row"])
def rmsnorm_matches_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """|y − golden| ≤ bounds.rmsnorm elementwise: y = x/√(mean(x²)+eps)⊙γ in every row regime (ULP error measured)."""
    case = data.draw(S.rmsnorm_cases(dtype), label="case")
    note(case)
    y = rmsnorm_forward(impl, case.x, case.weight, case.eps, dtype, device)
    assert_matches_golden(
        y, golden_rmsnorm(case.x, case.weight, case.eps), bound_rmsnorm(case.x, case.weight, case.eps, dtype)
    )


@law("RMSNorm")
@given(data=st.data())
@example(data=PINS["eps-dominated"])
def rmsnorm_output_has_norm_sqrt_d(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """With γ = 1, every row has ‖y‖₂ = √(D·ms/(ms+eps)), ms = mean(x²): on the sphere of radius √D when ms ≫ eps."""
    case = data.draw(S.rmsnorm_cases(dtype, gamma_kinds=("ones",)), label="case")
    case = case._replace(weight=torch.ones_like(case.weight), gamma="ones")
    note(case)
    y = rmsnorm_forward(impl, case.x, case.weight, case.eps, dtype, device)
    x, D = _rows(case.x), case.x.shape[-1]
    ms = (x * x).mean(axis=-1)
    expected = np.sqrt(D * ms / (ms + case.eps))
    b = np.linalg.norm(_rows(torch.as_tensor(bound_rmsnorm(case.x, case.weight, case.eps, dtype).abs)), axis=-1)
    assert_close(
        np.linalg.norm(_rows(y), axis=-1),
        expected,
        b + 4 * (D + 2) * U64 * expected,
        formula="‖bound of the row‖₂ + 4(D+2)·u_64·√(D·ms/(ms+eps))",
        what="‖y‖₂ per row",
        expected_name="√(D·ms/(ms+eps))",
    )


@law("RMSNorm")
@given(data=st.data())
@example(data=PINS["constant row, mean 3"])
def rmsnorm_preserves_sign(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """sign(y) = sign(x)·sign(γ) wherever y ≠ 0, exactly (rounding never flips a sign)."""
    case = data.draw(S.rmsnorm_cases(dtype), label="case")
    note(case)
    y = as_f64(rmsnorm_forward(impl, case.x, case.weight, case.eps, dtype, device))
    expected = np.sign(as_f64(case.x)) * np.sign(as_f64(case.weight))
    bad = (y != 0) & (np.sign(y) != expected)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        fail(
            f"sign(y) ≠ sign(x)·sign(γ) at {i}: x={as_f64(case.x)[i]!r}, γ={as_f64(case.weight)[i[-1]]!r}, "
            f"y={y[i]!r} ({int(bad.sum())} of {bad.size} elements)"
        )


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_is_scale_invariant(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f(α·x) = f(x) for α = 2^k up to eps: |f(αx) − f(x)| ≤ b(αx) + b(x) + |xγ|·|(ms+eps/α²)^-½ − (ms+eps)^-½|."""
    sc = data.draw(S.scaled_rmsnorm_cases(dtype), label="case")
    note(sc)
    c, alpha = sc.case, 2.0**sc.log2_alpha
    xa = (c.x.double() * alpha).to(dtype)  # exact by construction (α ≥ 1, no overflow)
    y, ya = (rmsnorm_forward(impl, v, c.weight, c.eps, dtype, device) for v in (c.x, xa))
    x, w = _rows(c.x), as_f64(c.weight)
    ms = (x * x).mean(axis=-1, keepdims=True)
    drift = np.abs(x * w) * np.abs(1 / np.sqrt(ms + c.eps / alpha**2) - 1 / np.sqrt(ms + c.eps))
    b = as_f64(torch.as_tensor(bound_rmsnorm(c.x, c.weight, c.eps, dtype).abs)).reshape(x.shape)
    ba = as_f64(torch.as_tensor(bound_rmsnorm(xa, c.weight, c.eps, dtype).abs)).reshape(x.shape)
    assert_close(
        _rows(ya),
        _rows(y),
        b + ba + drift * (1 + 8 * U64),
        dtype=dtype,
        what="f(α·x) vs f(x)",
        expected_name="f(x)",
        formula="b(x) + b(αx) + |xγ|·|(ms+eps/α²)^-½ − (ms+eps)^-½|",
    )


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_scales_with_gamma(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f_γ(x) = γ ⊙ f_1(x) for random γ (both signs, zeros): |f_γ − γ·f_1| ≤ b_γ + |γ|·b_1."""
    c = data.draw(
        S.rmsnorm_cases(dtype, gamma_kinds=("random_positive", "random_signed", "with_zeros", "tiny_and_large")),
        label="case",
    )
    note(c)
    ones = torch.ones_like(c.weight)
    y, y1 = (rmsnorm_forward(impl, c.x, w, c.eps, dtype, device) for w in (c.weight, ones))
    w = as_f64(c.weight)
    b = as_f64(torch.as_tensor(bound_rmsnorm(c.x, c.weight, c.eps, dtype).abs))
    b1 = as_f64(torch.as_tensor(bound_rmsnorm(c.x, ones, c.eps, dtype).abs))
    assert_close(
        y,
        as_f64(y1) * w,
        b + np.abs(w) * b1,
        dtype=dtype,
        what="f_γ(x) vs γ ⊙ f_1(x)",
        expected_name="γ⊙f_1(x)",
        formula="b_γ + |γ|·b_1",
    )


@law("RMSNorm")
@given(data=st.data())
@example(data=PINS["constant row, mean 3"])
def rmsnorm_does_not_center(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """With γ = 1, rows of non-zero mean keep it: Σ_i y_i = Σ_i x_i / √(ms+eps) (no mean subtraction)."""
    c = data.draw(S.rmsnorm_cases(dtype, kinds=("mean_shifted", "constant"), gamma_kinds=("ones",)), label="case")
    c = c._replace(weight=torch.ones_like(c.weight), gamma="ones")
    note(c)
    y = rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)
    x = _rows(c.x)
    expected = x.sum(axis=-1) / np.sqrt((x * x).mean(axis=-1) + c.eps)
    b = _rows(torch.as_tensor(bound_rmsnorm(c.x, c.weight, c.eps, dtype).abs)).sum(axis=-1)
    slack = 4 * (x.shape[-1] + 2) * U64 * np.abs(x).sum(axis=-1) / np.sqrt((x * x).mean(axis=-1) + c.eps)
    assert_close(
        _rows(y).sum(axis=-1),
        expected,
        b + slack,
        what="Σ_i y_i per row",
        expected_name="Σx/√(ms+eps)",
        formula="Σ_i bound_i + 4(D+2)·u_64·Σ|x|/√(ms+eps)",
    )


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_rows_are_independent(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Row i of the output depends only on row i: changing every other row moves y_i by at most 2·bound."""
    rc = data.draw(S.row_cases(dtype), label="case")
    note(rc)
    c = rc.case
    y, y2 = (_rows(rmsnorm_forward(impl, v, c.weight, c.eps, dtype, device))[rc.i] for v in (c.x, rc.other))
    b = as_f64(torch.as_tensor(bound_rmsnorm(c.x.reshape(-1, c.x.shape[-1])[rc.i], c.weight, c.eps, dtype).abs))
    assert_close(
        y2,
        y,
        2 * b,
        dtype=dtype,
        what=f"row {rc.i} after changing the other rows",
        expected_name="row with the original neighbours",
        formula="2·bounds.rmsnorm (both vs one golden)",
    )


@law("RMSNorm")
@given(data=st.data())
@example(data=S.ROW_PINS["four wide rows, k=1"])
def rmsnorm_is_batch_invariant(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f(x[:k]) == f(x)[:k] bitwise: a row's result does not depend on how many rows share the call (CPU)."""
    rc = data.draw(S.row_cases(dtype), label="case")
    note(rc)
    c = rc.case
    k = rc.i + 1 if rc.i + 1 < c.x.shape[0] else max(1, c.x.shape[0] - 1)
    full = rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)
    part = rmsnorm_forward(impl, c.x[:k].contiguous(), c.weight, c.eps, dtype, device)
    if device != "cpu":
        measure("batch_invariant", bool(torch.equal(full[:k], part)))
        raise NotApplicable("bitwise batch invariance is only required on CPU (measured on other devices)")
    assert_bitwise_equal(part, full[:k], what=f"f(x[:{k}]) vs f(x)[:{k}]", why="batch invariance")


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_preserves_shape_dtype_device(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """y has x's shape (..., D) — including 1-D and 3-D x — and x's dtype and device, whatever γ's dtype."""
    c = data.draw(S.rmsnorm_cases(dtype, max_dim=64), label="case")
    note(c)
    rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)  # checks shape, dtype, device


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_does_not_modify_input(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """The call leaves x and γ bitwise unchanged (no in-place normalisation of the caller's tensor)."""
    c = data.draw(S.rmsnorm_cases(dtype, max_dim=64), label="case")
    note(c)
    module, x = build_rmsnorm(impl, c.weight, c.eps, dtype, device), c.x.to(device)
    before, w_before = x.clone(), c.weight.clone()
    call(module, x, component="RMSNorm")
    assert_unchanged(before, x, what="input x")
    assert_unchanged(w_before.to(device), dict(module.named_parameters())["weight"], what="weight γ")


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_maps_zero_row_to_zeros(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """A zero row maps to a row of (finite) zeros: 0/√(0+eps)·γ = 0 — eps keeps padding rows NaN-free."""
    rc = data.draw(S.row_cases(dtype), label="case")
    c, zero = rc.case, rc.i
    x = c.x.reshape(-1, c.x.shape[-1]).clone()
    x[zero] = 0
    note(rc)
    y = rmsnorm_forward(impl, x.reshape(c.x.shape), c.weight, c.eps, dtype, device)
    assert_bitwise_equal(_rows(y)[zero], torch.zeros(x.shape[-1]), what=f"y of zero row {zero}")


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_confines_nonfinite_to_row(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """A NaN or ±inf in row i leaves every other row finite and within 2·bound of its clean result."""
    rc = data.draw(S.row_cases(dtype), label="case")
    poison = data.draw(st.sampled_from((float("nan"), float("inf"), -float("inf"))), label="poison")
    note(rc)
    c = rc.case
    x = c.x.reshape(-1, c.x.shape[-1]).clone()
    x[rc.i, data.draw(st.integers(0, x.shape[-1] - 1), label="poisoned element")] = poison
    y = _rows(rmsnorm_forward(impl, x.reshape(c.x.shape), c.weight, c.eps, dtype, device))
    clean = _rows(rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device))
    keep = np.arange(y.shape[0]) != rc.i
    assert_finite(torch.from_numpy(y[keep]), what=f"rows other than the poisoned row {rc.i}")
    b = _rows(torch.as_tensor(bound_rmsnorm(c.x, c.weight, c.eps, dtype).abs))
    assert_close(
        y[keep],
        clean[keep],
        2 * b[keep],
        dtype=dtype,
        what="other rows with a non-finite row present",
        expected_name="clean result",
        formula="2·bounds.rmsnorm",
    )


@law("RMSNorm", dtypes=(torch.bfloat16,))
@given(data=st.data())
@example(data=PINS["wide rows, D=512"])
def rmsnorm_bf16_drift_from_fp32_is_bounded(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """On the same bf16 inputs, |f_bf16(x) − f_fp32(x)| ≤ b_bf16 + b_fp32 (both measured against one golden)."""
    c = data.draw(S.rmsnorm_cases(dtype), label="case")
    note(c)
    y16 = rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)
    y32 = rmsnorm_forward(impl, c.x.float(), c.weight.float(), c.eps, torch.float32, device)
    b16 = as_f64(torch.as_tensor(bound_rmsnorm(c.x, c.weight, c.eps, dtype).abs))
    b32 = as_f64(torch.as_tensor(bound_rmsnorm(c.x.float(), c.weight.float(), c.eps, torch.float32).abs))
    drift = assert_close(
        y16,
        y32,
        b16 + b32,
        dtype=dtype,
        what="bf16 result vs fp32 result",
        expected_name="fp32 result",
        formula="b_bf16 + b_fp32 (bounds.rmsnorm)",
    )
    measure("max drift (bf16 ULP)", drift)


@law("RMSNorm", cost=2)
@given(data=st.data())
def rmsnorm_gradients_match_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """The backward pass (dx and dγ for a random cotangent) matches golden.rmsnorm_vjp within a derived bound."""
    gc = data.draw(S.rmsnorm_grad_cases(dtype), label="case")
    note(gc)
    c = gc.case
    module = build_rmsnorm(impl, c.weight, c.eps, dtype, device)
    x = c.x.to(device).requires_grad_(True)
    weight = dict(module.named_parameters())["weight"]
    dx, dw = backward(
        call(module, x, component="RMSNorm", grad=True), gc.grad_out.to(device), [x, weight], component="RMSNorm"
    )
    if dx is None or dw is None:
        fail(f"RMSNorm backward gives no gradient for {'x' if dx is None else 'weight'}")
    gdx, gdw = golden_module().rmsnorm_vjp(c.x, c.weight, c.eps, gc.grad_out)
    bdx, bdw = rmsnorm_vjp_bounds(c.x, c.weight, c.eps, gc.grad_out, gdx.hi, gdw.hi, dtype)
    assert_matches_golden(dx, gdx, bdx, what="dx", record=False)  # ULPs of cancelling sums say little
    assert_matches_golden(dw, gdw, bdw, what="dγ", record=False)


@law("RMSNorm", dtypes=(torch.float64,))
@given(data=st.data())
def rmsnorm_gradients_pass_gradcheck(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """In fp64 the backward pass agrees with finite differences (torch.autograd.gradcheck on x and γ)."""
    c = data.draw(
        S.rmsnorm_cases(dtype, kinds=("normal", "mean_shifted", "outlier"), max_dim=32, max_rows=3), label="case"
    )
    note(c)
    module = build_rmsnorm(impl, c.weight, c.eps, dtype, device)
    x, w = c.x.to(device).requires_grad_(True), c.weight.to(device).requires_grad_(True)

    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(module, {"weight": w}, (x,))

    gradcheck(f, (x, w), component="RMSNorm")
