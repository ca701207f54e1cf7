"""Laws of RMSNorm: y = x / √(mean(x², −1) + eps) ⊙ γ, for x of shape (..., D) and γ of shape (D,).

Each law's docstring is the law. Bounds come from ``properties.numerics.bounds`` (per element, derived from the
unit roundoff of the dtypes and D, sound for every reduction order) or are bitwise where the law is exact in
floating point.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

import golden
from properties.library import protocols
from properties.library import strategies as S
from properties.library.assertions import (
    as_f64,
    assert_batch_invariant,
    assert_bitwise_equal,
    assert_close,
    assert_finite,
    assert_matches_golden,
    assert_unchanged,
    fail,
)
from properties.library.components import record
from properties.library.context import measure
from properties.library.harness import backward, call, gradcheck, note
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

DType = torch.dtype
Data = st.DataObject


PINS = S.RMSNORM_PINS
RECORD = record("RMSNorm")


def build_rmsnorm(impl: Implementation, weight: torch.Tensor, eps: float, dtype: DType, device: str) -> torch.nn.Module:
    """RMSNorm(D, eps=eps) with ``weight`` loaded (the record's build: call protocols apply)."""
    return RECORD.build(impl, RECORD.case((), {"weight": weight}, eps=eps), dtype, device)


def rmsnorm_forward(
    impl: Implementation,
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    dtype: DType,
    device: str,
    *,
    output_cause: str = "contract",
) -> torch.Tensor:
    """y = impl.RMSNorm(D, eps)(x) with ``weight`` loaded; y must keep x's shape, dtype and device (a contract
    failure, or ``output_cause`` for the law about exactly that)."""
    __tracebackhide__ = True
    case = RECORD.case((x,), {"weight": weight}, eps=eps)
    return RECORD.forward(impl, case, dtype, device, output_cause=output_cause)[0]


def _rows(t: torch.Tensor | np.ndarray) -> np.ndarray:
    return as_f64(t).reshape(-1, t.shape[-1])


def _radius(case: S.RMSNormCase) -> np.ndarray:
    """√(D·ms/(ms+eps)) per row: the norm of the exact output for γ = 1."""
    x = _rows(case.x)
    ms = (x * x).mean(axis=-1)
    return np.sqrt(x.shape[-1] * ms / (ms + case.eps))


def _uncentred_sum(case: S.RMSNormCase) -> np.ndarray:
    """Σ_i x_i / √(ms+eps) per row: the row sum of the exact output for γ = 1."""
    x = _rows(case.x)
    return x.sum(axis=-1) / np.sqrt((x * x).mean(axis=-1) + case.eps)


def _ones_gamma(case: S.RMSNormCase) -> S.RMSNormCase:
    return case._replace(weight=torch.ones_like(case.weight), gamma="ones")


def _poisoned(rc: S.RowCase, poison: float, index: int) -> torch.Tensor:
    """x with element ``index`` of row rc.i replaced by ``poison``."""
    x = rc.case.x.reshape(-1, rc.case.x.shape[-1]).clone()
    x[rc.i, index] = poison
    return x.reshape(rc.case.x.shape)


def _grads(impl: Implementation, gc: S.GradCase, dtype: DType, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dγ) of the implementation for the cotangent gc.grad_out; a missing gradient fails the law."""
    c = gc.case
    module = build_rmsnorm(impl, c.weight, c.eps, dtype, device)
    x = c.x.to(device).requires_grad_(True)
    weight = dict(module.named_parameters())["weight"]
    y = call(module, x, component="RMSNorm", grad=True)
    dx, dw = backward(y, gc.grad_out.to(device), [x, weight], component="RMSNorm")
    if dx is None or dw is None:
        fail(f"RMSNorm backward gives no gradient for {'x' if dx is None else 'weight'}")
    return dx, dw


@law("RMSNorm", cost=2)
@given(data=st.data())
@example(data=PINS["zero row"])
@example(data=PINS["one huge outlier"])
@example(data=PINS["eps-dominated"])
@example(data=PINS["subnormal row"])
@example(data=PINS["gains 2^-8 … 2^4"])
@protocols.honoured(protocols.FORWARD, pin=S.RMSNORM_PROTOCOL_PIN)
def rmsnorm_matches_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """|y − golden| ≤ bounds.rmsnorm elementwise: y = x/√(mean(x²)+eps)⊙γ in every row regime (ULP error measured)."""
    case = data.draw(S.rmsnorm_cases(dtype), label="case")
    note(case)
    y = rmsnorm_forward(impl, case.x, case.weight, case.eps, dtype, device)
    exact = golden.rmsnorm(case.x, case.weight, case.eps)
    b = bounds.rmsnorm(case.x, case.weight, case.eps, dtype, drawn=True)  # the probabilistic tier where it applies
    assert_matches_golden(y, exact, b)


@law("RMSNorm")
@given(data=st.data())
@example(data=PINS["eps-dominated"])
@S.pinned(S.WIDTH_PINS)
def rmsnorm_output_has_norm_sqrt_d(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """With γ = 1, every row has ‖y‖₂ = √(D·ms/(ms+eps)), ms = mean(x²): on the sphere of radius √D when ms ≫ eps
    (model widths D = 2048 … 16384 pinned)."""
    case = _ones_gamma(data.draw(S.rmsnorm_cases(dtype, gamma_kinds=("ones",)), label="case"))
    note(case)
    y = rmsnorm_forward(impl, case.x, case.weight, case.eps, dtype, device)
    norms = np.linalg.norm(_rows(y), axis=-1)
    b = bounds.rmsnorm_norm(case.x, case.eps, dtype)
    assert_close(norms, _radius(case), b, what="‖y‖₂ per row", expected_name="√(D·ms/(ms+eps))")


@law("RMSNorm")
@given(data=st.data())
@example(data=PINS["constant row, mean 3"])
@S.pinned(S.WIDTH_PINS)
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


@law("RMSNorm", tags=("attains_bound",))  # for ms ≪ eps the exact eps term is most of |f(αx) − f(x)| and the bound
@given(data=st.data())
def rmsnorm_is_scale_invariant(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f(α·x) = f(x) for α = 2^k up to eps: |f(αx) − f(x)| ≤ b(αx) + b(x) + |xγ|·|(ms+eps/α²)^-½ − (ms+eps)^-½|."""
    sc = data.draw(S.scaled_rmsnorm_cases(dtype), label="case")
    note(sc)
    c, k = sc.case, sc.log2_alpha
    xa = (c.x.double() * 2.0**k).to(dtype)  # exact by construction (α ≥ 1, no overflow)
    y, ya = (rmsnorm_forward(impl, v, c.weight, c.eps, dtype, device) for v in (c.x, xa))
    b = bounds.rmsnorm_scale_invariance(c.x, c.weight, c.eps, k, dtype)
    assert_close(ya, y, b, what="f(α·x) vs f(x)", expected_name="f(x)")


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_scales_with_gamma(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f_γ(x) = γ ⊙ f_1(x) for random γ (both signs, zeros): |f_γ − γ·f_1| ≤ b_γ + |γ|·b_1."""
    kinds = ("random_positive", "random_signed", "with_zeros", "tiny_and_large")
    c = data.draw(S.rmsnorm_cases(dtype, gamma_kinds=kinds), label="case")
    note(c)
    y, y1 = (rmsnorm_forward(impl, c.x, w, c.eps, dtype, device) for w in (c.weight, torch.ones_like(c.weight)))
    b = bounds.rmsnorm_gamma_scaling(c.x, c.weight, c.eps, dtype)
    assert_close(y, as_f64(y1) * as_f64(c.weight), b, what="f_γ(x) vs γ ⊙ f_1(x)", expected_name="γ⊙f_1(x)")


@law("RMSNorm")
@given(data=st.data())
@example(data=PINS["constant row, mean 3"])
def rmsnorm_does_not_center(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """With γ = 1, rows of non-zero mean keep it: Σ_i y_i = Σ_i x_i / √(ms+eps) (no mean subtraction)."""
    kinds = ("mean_shifted", "constant")
    c = _ones_gamma(data.draw(S.rmsnorm_cases(dtype, kinds=kinds, gamma_kinds=("ones",)), label="case"))
    note(c)
    y = rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)
    b = bounds.rmsnorm_row_sum(c.x, c.eps, dtype)
    assert_close(_rows(y).sum(axis=-1), _uncentred_sum(c), b, what="Σ_i y_i per row", expected_name="Σx/√(ms+eps)")


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_rows_are_independent(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Row i of the output depends only on row i: changing every other row moves y_i by at most 2·bound."""
    rc = data.draw(S.row_cases(dtype), label="case")
    note(rc)
    c = rc.case
    y, y2 = (_rows(rmsnorm_forward(impl, v, c.weight, c.eps, dtype, device))[rc.i] for v in (c.x, rc.other))
    b = bounds.between(bounds.rmsnorm(_rows(c.x)[rc.i], c.weight, c.eps, dtype))
    what, name = f"row {rc.i} after changing the other rows", "row with the original neighbours"
    assert_close(y2, y, b, what=what, expected_name=name)


@law("RMSNorm")
@given(data=st.data())
@example(data=S.ROW_PINS["four wide rows, k=1"])
@S.pinned(S.WIDTH_ROW_PINS)
def rmsnorm_is_batch_invariant(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f(x[:k]) == f(x)[:k] bitwise: a row's result does not depend on how many rows share the call — required on
    the CPU unless declared ``batch_invariant: False``, measured elsewhere (``assert_batch_invariant``)."""
    rc = data.draw(S.row_cases(dtype), label="case")
    note(rc)
    c = rc.case
    k = rc.i + 1 if rc.i + 1 < c.x.shape[0] else max(1, c.x.shape[0] - 1)
    full = rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)
    part = rmsnorm_forward(impl, c.x[:k].contiguous(), c.weight, c.eps, dtype, device)
    b = bounds.between(bounds.rmsnorm(c.x[:k], c.weight, c.eps, dtype))
    assert_batch_invariant(part, full[:k], b, what=f"f(x[:{k}]) vs f(x)[:{k}]")


@law("RMSNorm")
@given(data=st.data())
def rmsnorm_preserves_shape_dtype_device(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """y has x's shape (..., D) — including 1-D and 3-D x — and x's dtype and device, whatever γ's dtype."""
    c = data.draw(S.rmsnorm_cases(dtype, max_dim=64), label="case")
    note(c)
    rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device, output_cause="law")  # this law's own assertion


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
    index = data.draw(st.integers(0, rc.case.x.shape[-1] - 1), label="poisoned element")
    note(rc)
    c, keep = rc.case, np.arange(_rows(rc.case.x).shape[0]) != rc.i
    y, clean = (
        _rows(rmsnorm_forward(impl, v, c.weight, c.eps, dtype, device)) for v in (_poisoned(rc, poison, index), c.x)
    )
    assert_finite(
        torch.from_numpy(y),
        what=f"rows other than the poisoned row {rc.i}",
        mask=np.broadcast_to(keep[:, None], y.shape),  # indices of the call's rows (the poisoned one left out)
        without=clean,
        cause=f"the poison in row {rc.i}",
    )
    b = bounds.between(bounds.rmsnorm(_rows(c.x)[keep], c.weight, c.eps, dtype))
    assert_close(y[keep], clean[keep], b, what="other rows with a non-finite row present", expected_name="clean result")


@law("RMSNorm", dtypes=(torch.bfloat16,))
@given(data=st.data())
@example(data=PINS["wide rows, D=512"])
def rmsnorm_bf16_drift_from_fp32_is_bounded(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """On the same bf16 inputs, |f_bf16(x) − f_fp32(x)| ≤ b_bf16 + b_fp32 (both measured against one golden)."""
    c = data.draw(S.rmsnorm_cases(dtype), label="case")
    note(c)
    y16 = rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)
    y32 = rmsnorm_forward(impl, c.x.float(), c.weight.float(), c.eps, torch.float32, device)
    b = bounds.rmsnorm_drift(c.x, c.weight, c.eps)
    drift = assert_close(y16, y32, b, what="bf16 result vs fp32 result", expected_name="fp32 result")
    measure("max drift (bf16 ULP)", drift)


@law("RMSNorm", cost=2)
@given(data=st.data())
@example(data=S.GRAD_PINS["RMSNorm, 160 rows"])
@protocols.honoured(protocols.GRADIENT, pin=S.RMSNORM_PROTOCOL_GRAD_PIN)
def rmsnorm_gradients_match_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """The backward pass (dx and dγ for a random cotangent) matches golden.rmsnorm_vjp within a derived bound
    (dγ sums over every row: pinned at 160 rows, 2½ blocks of 64)."""
    gc = data.draw(S.rmsnorm_grad_cases(dtype), label="case")
    note(gc)
    c = gc.case
    dx, dw = _grads(impl, gc, dtype, device)
    gdx, gdw = golden.rmsnorm_vjp(c.x, c.weight, c.eps, gc.grad_out)
    bdx, bdw = bounds.rmsnorm_vjp(c.x, c.weight, c.eps, gc.grad_out, dtype, drawn=True)
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

    gradcheck(f, (x, w), component="RMSNorm", module=module)
