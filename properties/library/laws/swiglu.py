"""Laws of SwiGLU: y = W_down(silu(W_gate x) ⊙ W_up x), silu(z) = z·σ(z); W_gate, W_up (F, D), W_down (D, F).

Bounds come from ``properties.numerics.bounds`` (forward, backward, the elementwise gate, the invariants); the
laws' weights are drawn with independent symmetric entries (``strategies.linear_weight``), so errors propagate
through them with the random-sign model (``random_weights=True``). nn.Linear is not batch-invariant, so token
independence is checked within the bound.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

import golden
from golden import dd
from properties.library import protocols
from properties.library import strategies as S
from properties.library.assertions import (
    as_f64,
    assert_batch_invariant,
    assert_bitwise_equal,
    assert_close,
    assert_matches_golden,
    assert_unchanged,
)
from properties.library.assertions import fail as _fail
from properties.library.components import record
from properties.library.context import count_examples, measure
from properties.library.harness import backward, call, construct, gradcheck, note
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

DType = torch.dtype
Data = st.DataObject


PINS = S.SWIGLU_PINS
NAMES = ("w_gate.weight", "w_up.weight", "w_down.weight")
RECORD = record("SwiGLU")


def build_swiglu(impl: Implementation, params: dict[str, torch.Tensor], dtype: DType, device: str) -> torch.nn.Module:
    """SwiGLU(D, F) with w_gate / w_up / w_down loaded (``params`` keyed "w_gate.weight", …; the record's build)."""
    return RECORD.build(impl, RECORD.case((), params), dtype, device)


def swiglu_forward(
    impl: Implementation,
    x: torch.Tensor,
    params: dict[str, torch.Tensor],
    dtype: DType,
    device: str,
    *,
    output_cause: str = "contract",
) -> torch.Tensor:
    """y = impl.SwiGLU(D, F)(x) with ``params`` loaded; y must keep x's shape, dtype and device."""
    __tracebackhide__ = True
    return RECORD.forward(impl, RECORD.case((x,), params), dtype, device, output_cause=output_cause)[0]


def _b(case: S.SwiGLUCase, dtype: torch.dtype) -> bounds.Bound:
    """bounds.swiglu of the case (its weights are drawn: random signs)."""
    return bounds.swiglu(case.x, case.w_gate, case.w_up, case.w_down, dtype, random_weights=True)


def _tokens(y: torch.Tensor, i: int) -> np.ndarray:
    return as_f64(y).reshape(-1, y.shape[-1])[i]


def _sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):  # inf − inf where an output overflows (not judged there)
        return a + b


def _grads(impl: Implementation, gc: S.GradCase, dtype: DType, device: str) -> list[torch.Tensor]:
    """(dx, dW_gate, dW_up, dW_down) of the implementation for gc.grad_out; a missing gradient fails the law."""
    c = gc.case
    module = build_swiglu(impl, c.params, dtype, device)
    x = c.x.to(device).requires_grad_(True)
    params = dict(module.named_parameters())
    y = call(module, x, component="SwiGLU", grad=True)
    grads = backward(y, gc.grad_out.to(device), [x, *(params[n] for n in NAMES)], component="SwiGLU")
    for name, got in zip(("dx", "dW_gate", "dW_up", "dW_down"), grads, strict=True):
        if got is None:
            _fail(f"SwiGLU backward gives no gradient {name}")
    return grads


@law("SwiGLU", cost=2)
@given(data=st.data())
@example(data=PINS["zero token"])
@example(data=PINS["large negative gate"])
@protocols.honoured(protocols.FORWARD, pin=S.SWIGLU_PROTOCOL_PIN)
def swiglu_matches_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """|y − golden| ≤ bounds.swiglu elementwise for y = W_down(silu(W_gate x) ⊙ W_up x) (ULP error measured)."""
    c = data.draw(S.swiglu_cases(dtype), label="case")
    note(c)
    y = swiglu_forward(impl, c.x, c.params, dtype, device)
    assert_matches_golden(y, golden.swiglu(c.x, c.w_gate, c.w_up, c.w_down), _b(c, dtype))


@law("SwiGLU")
@given(data=st.data())
def swiglu_maps_zero_to_zero(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """SwiGLU(0) = 0 exactly for any weights: silu(0)·0 = 0 (no bias, no offset)."""
    c = data.draw(S.swiglu_cases(dtype, max_dim=64), label="case")
    note(c)
    y = swiglu_forward(impl, torch.zeros_like(c.x), c.params, dtype, device)
    assert_bitwise_equal(y, torch.zeros_like(c.x), what="SwiGLU(0)")


@functools.lru_cache(maxsize=4)
def _silu_gate_golden(dtype: torch.dtype) -> tuple[torch.Tensor, dd.DD, bounds.Bound]:
    """All finite values of a 16-bit dtype as an (N, 1) tensor, golden silu(x)·x and its bound.

    D = F = 1: one value per token, so an overflowing product (inf) cannot meet a zero weight (0·inf = NaN).
    """
    x = S.all_finite_values(dtype).reshape(-1, 1)
    s = golden.silu(x)
    prod = dd.mul_d(dd.DD(np.asarray(s.hi), np.asarray(s.lo)), as_f64(x))
    return x, dd.DD(np.asarray(prod.hi), np.asarray(prod.lo)), bounds.silu_gate(x, dtype)


@law("SwiGLU", dtypes=(torch.bfloat16, torch.float16), tags=("attains_bound",))  # every value: the worst one found
def swiglu_is_elementwise_silu_gate(impl: Implementation, dtype: DType, device: str) -> None:
    """With identity weights (F = D = 1), y = silu(x)·x for every finite bf16 / fp16 value x (exhaustive)."""
    x, gold, bound = _silu_gate_golden(dtype)
    eye = torch.eye(x.shape[-1], dtype=dtype)
    y = swiglu_forward(impl, x.clone(), dict.fromkeys(NAMES, eye), dtype, device)  # x is cached: a subject
    # that writes into its input must not corrupt it for the next run in this process (the kill matrix runs many)
    count_examples(x.numel())
    assert_matches_golden(y, gold, bound, what="silu(x)·x")


@law("SwiGLU")
@given(data=st.data())
def swiglu_is_invariant_to_hidden_permutation(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Permuting the F hidden units (rows of W_gate, W_up and columns of W_down alike) leaves y unchanged (2·bound)."""
    c = data.draw(S.swiglu_cases(dtype, max_dim=128), label="case")
    perm = torch.tensor(data.draw(st.permutations(range(c.w_gate.shape[0])), label="hidden permutation"))
    note(c)
    y = swiglu_forward(impl, c.x, c.params, dtype, device)
    permuted = {"w_gate.weight": c.w_gate[perm], "w_up.weight": c.w_up[perm], "w_down.weight": c.w_down[:, perm]}
    yp = swiglu_forward(impl, c.x, permuted, dtype, device)
    assert_close(yp, y, bounds.between(_b(c, dtype)), what="y with permuted hidden units", expected_name="y")


@law("SwiGLU")
@given(data=st.data())
@S.pinned(S.HIDDEN_PINS)
def swiglu_tokens_are_independent(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Token i's output depends only on token i: redrawing every other token moves y_i by at most 2·bound
    (F = 28672 hidden units pinned)."""
    tc = data.draw(S.swiglu_token_cases(dtype), label="case")
    note(tc)
    c = tc.case
    y, y2 = (_tokens(swiglu_forward(impl, v, c.params, dtype, device), tc.i) for v in (c.x, tc.other))
    b = bounds.between(bounds.swiglu(_tokens(c.x, tc.i), c.w_gate, c.w_up, c.w_down, dtype, random_weights=True))
    what, name = f"token {tc.i} after changing the others", "token with the original neighbours"
    assert_close(y2, y, b, what=what, expected_name=name)


@law("SwiGLU")
@given(data=st.data())
def swiglu_is_batch_invariant(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f(x[:k]) and f(x)[:k] agree within 2·bound, and whether bitwise is measured and reported — a CPU GEMM picks
    its kernel by the number of tokens (nn.Linear, the reference's, is not batch-invariant there); bitwise equality
    is required when declared ``batch_invariant: True``."""
    tc = data.draw(S.swiglu_token_cases(dtype), label="case")
    note(tc)
    x = tc.case.x.reshape(-1, tc.case.x.shape[-1])
    k = tc.i + 1 if tc.i + 1 < x.shape[0] else x.shape[0] - 1
    full = swiglu_forward(impl, x, tc.case.params, dtype, device)
    part = swiglu_forward(impl, x[:k].contiguous(), tc.case.params, dtype, device)
    c = tc.case
    b = bounds.between(bounds.swiglu(x[:k], c.w_gate, c.w_up, c.w_down, dtype, random_weights=True))
    assert_batch_invariant(part, full[:k], b, what=f"f(x[:{k}]) vs f(x)[:{k}]")


@law("SwiGLU")
@given(data=st.data())
def swiglu_is_linear_in_w_down(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f(W₁ + W₂) = f(W₁) + f(W₂) in W_down: |f(W) − f(W₁) − f(W₂)| ≤ b(W) + b(W₁) + b(W₂) + |h|·|W − (W₁+W₂)|
    (on outputs whose exact values, and hidden units, stay below half the dtype's range)."""
    c = data.draw(S.swiglu_cases(dtype, max_dim=128), label="case")
    seed = data.draw(st.integers(0, 2**32), label="split seed")
    note(c)
    w1 = S.linear_weight(*c.w_down.shape, dtype, seed, c.scale)
    w2 = (c.w_down.double() - w1.double()).to(dtype)  # W₂ = W − W₁ rounded to the dtype (in the bound)
    y, y1, y2 = (
        as_f64(swiglu_forward(impl, c.x, {**c.params, "w_down.weight": w}, dtype, device)) for w in (c.w_down, w1, w2)
    )
    b = bounds.swiglu_linearity(c.x, c.w_gate, c.w_up, c.w_down, w1, w2, dtype)
    assert_close(y, _sum(y1, y2), b, what="f(W_down) vs f(W₁) + f(W₂)", expected_name="f(W₁)+f(W₂)")


@law("SwiGLU")
@given(data=st.data())
def swiglu_preserves_shape_dtype_device(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """y has x's shape (..., D) — 1-D, 2-D and 3-D x — and x's dtype and device."""
    c = data.draw(S.swiglu_cases(dtype, max_dim=64), label="case")
    note(c)
    swiglu_forward(impl, c.x, c.params, dtype, device, output_cause="law")  # this law's own assertion


@law("SwiGLU")
@given(data=st.data())
def swiglu_does_not_modify_input(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """The call leaves x and the three weight matrices bitwise unchanged."""
    c = data.draw(S.swiglu_cases(dtype, max_dim=64), label="case")
    note(c)
    module, x = build_swiglu(impl, c.params, dtype, device), c.x.to(device)
    before = x.clone()
    call(module, x, component="SwiGLU")
    assert_unchanged(before, x, what="input x")
    params = dict(module.named_parameters())
    for name in NAMES:
        assert_unchanged(c.params[name].to(device), params[name], what=name)


@law("SwiGLU", dtypes=(torch.bfloat16,))
@given(data=st.data())
def swiglu_bf16_drift_from_fp32_is_bounded(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """On the same bf16 inputs and weights, |f_bf16 − f_fp32| ≤ b_bf16 + b_fp32 (both against one golden)."""
    c = data.draw(S.swiglu_cases(dtype), label="case")
    note(c)
    y16 = swiglu_forward(impl, c.x, c.params, dtype, device)
    y32 = swiglu_forward(impl, c.x.float(), {k: v.float() for k, v in c.params.items()}, torch.float32, device)
    b = bounds.swiglu_drift(c.x, c.w_gate, c.w_up, c.w_down)
    drift = assert_close(y16, y32, b, what="bf16 result vs fp32 result", expected_name="fp32 result")
    measure("max drift (bf16 ULP)", drift)


@law("SwiGLU", cost=2)
@given(data=st.data())
@example(data=S.GRAD_PINS["SwiGLU, 160 rows"])
@protocols.honoured(protocols.GRADIENT, pin=S.SWIGLU_PROTOCOL_GRAD_PIN)
def swiglu_gradients_match_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """The backward pass (dx, dW_gate, dW_up, dW_down for a random cotangent) matches golden.swiglu_vjp within a
    running-error bound (the dW sum over every row: pinned at 160 rows, 2½ blocks of 64)."""
    gc = data.draw(S.swiglu_grad_cases(dtype), label="case")
    note(gc)
    c = gc.case
    grads = _grads(impl, gc, dtype, device)
    gold = golden.swiglu_vjp(c.x, c.w_gate, c.w_up, c.w_down, gc.grad_out)
    bnds = bounds.swiglu_vjp(c.x, c.w_gate, c.w_up, c.w_down, gc.grad_out, dtype)
    for name, got, g, b in zip(("dx", "dW_gate", "dW_up", "dW_down"), grads, gold, bnds, strict=True):
        assert_matches_golden(got, g, b, what=name, record=False)


@law("SwiGLU", dtypes=(torch.float64,))
@given(data=st.data())
def swiglu_gradients_pass_gradcheck(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """In fp64 the backward pass agrees with finite differences (gradcheck on x and the three weights)."""
    c = data.draw(S.swiglu_cases(dtype, max_dim=16, max_rows=2, kinds=("normal", "mean_shifted")), label="case")
    note(c)
    module = build_swiglu(impl, c.params, dtype, device)
    inputs = tuple(t.to(device).requires_grad_(True) for t in (c.x, c.w_gate, c.w_up, c.w_down))

    def f(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(module, dict(zip(NAMES, (wg, wu, wd), strict=True)), (x,))

    gradcheck(f, inputs, component="SwiGLU", module=module)


@law("SwiGLU", dtypes=(torch.float32,))
def swiglu_has_three_matrices_of_ffn_dim(impl: Implementation, dtype: DType, device: str) -> None:
    """SwiGLU(D, F) has exactly three bias-free matrices: w_gate, w_up (F, D) and w_down (D, F) — 3·D·F parameters."""
    for D, F in ((8, 24), (96, 256), (123, 328)):
        module = construct(impl, "SwiGLU", (D, F), {}, dtype, device)  # counted as built, before any loading
        shapes = {n: tuple(p.shape) for n, p in module.named_parameters()}
        count = sum(p.numel() for p in module.parameters())
        if count != 3 * D * F:
            _fail(f"SwiGLU({D}, {F}) has {count} parameters ≠ 3·D·F = {3 * D * F}; parameters: {shapes}")
        count_examples(1)
