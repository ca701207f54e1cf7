"""Laws of AddRMSNorm: (y, h) = (RMSNorm(x + r), x + r) for a branch output x and the residual stream r of shape
(..., D) and γ of shape (D,) — the residual add and the next pre-norm of a block, one kernel in every serving stack
(vLLM's ``fused_add_rms_norm``, FlashInfer's ``fused_add_rmsnorm``, Liger's ``LigerFusedAddRMSNorm``).

Each law's docstring is the law. Two orders are accepted and a module may declare its own (``CONVENTIONS
["AddRMSNorm"]["norm_input"]``): the norm reads the h it returns, rounded to the input dtype (unfused: vLLM, Liger),
or the unrounded sum in the compute dtype (fused fp32 kernels, ONNX Runtime's skip norm). Golden values are those of
the exact sum (``golden.add_rmsnorm``); the bounds (``bounds.add_rmsnorm``, ``add_rmsnorm_from_h``,
``add_rmsnorm_vjp``) are RMSNorm's analysis of a norm whose input errs by the rounding of the sum — ½ ULP of h, or
u_c·|h| — so both orders pass and a declaration is judged at its own precision.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

import golden
from properties.library import protocols
from properties.library import strategies as S
from properties.library.assertions import as_f64, assert_bitwise_equal, assert_matches_golden, assert_unchanged, fail
from properties.library.components import record
from properties.library.context import current, measure
from properties.library.harness import backward, note
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

DType = torch.dtype
Data = st.DataObject

PINS = S.ADD_RMSNORM_PINS
RECORD = record("AddRMSNorm")


def build_add_rmsnorm(impl: Implementation, weight: torch.Tensor, eps: float, dtype: DType, device: str):
    """AddRMSNorm(D, eps=eps) with ``weight`` loaded (the record's build: call protocols apply)."""
    return RECORD.build(impl, RECORD.case((), {"weight": weight}, eps=eps), dtype, device)


def call_pair(
    module: torch.nn.Module, x: torch.Tensor, residual: torch.Tensor, *, grad: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, h) = module(x, residual) (under the law's call protocol, if any); another count of outputs is a
    contract failure."""
    __tracebackhide__ = True
    y, h = RECORD.call(module, (x, residual), grad=grad, check=False)
    return y, h


def add_rmsnorm_forward(
    impl: Implementation,
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    dtype: DType,
    device: str,
    *,
    output_cause: str = "contract",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, h) = impl.AddRMSNorm(D, eps)(x, residual) with ``weight`` loaded; y and h must keep x's shape, dtype and
    device (a contract failure, or ``output_cause`` for the law about exactly that)."""
    __tracebackhide__ = True
    case = RECORD.case((x, residual), {"weight": weight}, eps=eps)
    y, h = RECORD.forward(impl, case, dtype, device, output_cause=output_cause)
    return y, h


def rounded_once(x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """x + r rounded once to x.dtype, computed by the verifier: the float64 sum rounded to a narrower dtype is the
    correctly rounded sum (53 ≥ 2p + 2 bits: double rounding is innocuous for +; IEEE signed zeros, ties to even,
    overflow, inf and NaN carry over), and fp64 inputs are added in fp64 itself."""
    return (x.detach().cpu().double() + r.detach().cpu().double()).to(x.dtype)


def _assert_h(h: torch.Tensor, gh: golden.Golden, bh: bounds.Bound) -> None:
    """h is the correctly rounded exact sum (bitwise), or within its bound where declared inputs err."""
    __tracebackhide__ = True
    if bh.max_ulps <= 0.5:
        assert_bitwise_equal(h, gh.rounded(h.dtype), what="h", why="x + r correctly rounded to the input dtype")
    else:
        assert_matches_golden(h, gh, bh, what="h", record=False)


def _assert_new_memory(outputs: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]) -> None:
    """No output overlaps in memory an input or an output named before it (conservative: interleaved views of one
    storage count as overlapping)."""
    __tracebackhide__ = True
    seen = list(inputs.items())
    for name, t in outputs.items():
        protocols.assert_apart([t], seen, f"output {name} (an in-place result handed back?)")
        seen.append((name, t))


@law("AddRMSNorm", cost=2)
@given(data=st.data())
@example(data=PINS["zero branch"])
@example(data=PINS["wide rows, D=1024"])
@protocols.honoured(protocols.FORWARD, pin=PINS["every protocol"])
def add_rmsnorm_matches_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """|y − golden| ≤ bounds.add_rmsnorm elementwise, y = RMSNorm of the exact sum x + r, and h is x + r correctly
    rounded — in every row regime of the stream and every branch (small, comparable, large, cancelling, zero), under
    every call protocol (modes, held outputs, alternated, tied and moved instances)."""
    c = data.draw(S.add_rmsnorm_cases(dtype), label="case")
    note(c)
    y, h = add_rmsnorm_forward(impl, c.x, c.residual, c.weight, c.eps, dtype, device)
    gy, gh = golden.add_rmsnorm(c.x, c.residual, c.weight, c.eps)
    by, bh = bounds.add_rmsnorm(c.x, c.residual, c.weight, c.eps, dtype)
    _assert_h(h, gh, bh)
    assert_matches_golden(y, gy, by, what="y")


@law("AddRMSNorm")
@given(data=st.data())
@example(data=PINS["every corner"])
def add_rmsnorm_sum_is_rounded_once(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """h = x + r rounded once to the input dtype, bitwise — IEEE addition with its corners: ties to even, signed
    zeros (−0 + −0 = −0, v − v = +0), an overflow to ±inf (also at the tie max + ½ulp), ±inf and NaN."""
    c = data.draw(S.add_rmsnorm_sum_cases(dtype), label="case")
    note(c)
    _, h = add_rmsnorm_forward(impl, c.x, c.residual, c.weight, c.eps, dtype, device)
    expected = rounded_once(c.x, c.residual)
    nan = np.isnan(as_f64(expected))
    what, why = "h", "x + r rounded once"
    assert_bitwise_equal(h, expected, what=what, why=why, zeros_signed=True, nan_expected=nan)


@law("AddRMSNorm")
@given(data=st.data())
@example(data=PINS["wide rows, D=4096"])
def add_rmsnorm_normalizes_the_sum_it_returns(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """y = RMSNorm(h) for the h the module returns: |y − golden.rmsnorm(h)| ≤ bounds.add_rmsnorm_from_h — RMSNorm's
    own bound, widened by (u_c + u_t)·|h| for a fused norm that reads the unrounded sum (model width pinned)."""
    c = data.draw(S.add_rmsnorm_cases(dtype), label="case")
    note(c)
    y, h = add_rmsnorm_forward(impl, c.x, c.residual, c.weight, c.eps, dtype, device)
    h = h.detach().cpu()
    b = bounds.add_rmsnorm_from_h(h, c.weight, c.eps, dtype)
    assert_matches_golden(y, golden.rmsnorm(h, c.weight, c.eps), b, what="y vs RMSNorm(h returned)")


@law("AddRMSNorm")
@given(data=st.data())
def add_rmsnorm_outputs_are_new_tensors(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """The call leaves x, r and γ bitwise unchanged, and y and h are new memory: neither overlaps x, r, γ or the
    other output (a kernel that updates its arguments in place must hand back copies)."""
    c = data.draw(S.add_rmsnorm_cases(dtype, max_dim=64), label="case")
    note(c)
    module = build_add_rmsnorm(impl, c.weight, c.eps, dtype, device)
    x, r = c.x.to(device), c.residual.to(device)
    before = x.clone(), r.clone(), c.weight.to(device).clone()
    y, h = call_pair(module, x, r)
    inputs = {"x": x, "residual": r, "weight": dict(module.named_parameters())["weight"]}
    for (name, now), then in zip(inputs.items(), before, strict=True):
        assert_unchanged(then, now, what=name)
    _assert_new_memory({"y": y, "h": h}, inputs)


@law("AddRMSNorm")
@given(data=st.data())
def add_rmsnorm_preserves_shape_dtype_device(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """y and h have x's shape (..., D) — including 1-D and 3-D x — and x's dtype and device, whatever γ's dtype."""
    c = data.draw(S.add_rmsnorm_cases(dtype, max_dim=64), label="case")
    note(c)
    add_rmsnorm_forward(impl, c.x, c.residual, c.weight, c.eps, dtype, device, output_cause="law")  # this law's own


def _grads(impl: Implementation, gc: S.AddGradCase, dtype: DType, device: str) -> list[torch.Tensor]:
    """[dx, d(residual), dγ] of the subject for the case's cotangents of y and h (a missing one: the law fails)."""
    c = gc.case
    module = build_add_rmsnorm(impl, c.weight, c.eps, dtype, device)
    x, r = (t.to(device).requires_grad_(True) for t in (c.x, c.residual))
    weight = dict(module.named_parameters())["weight"]
    y, h = call_pair(module, x, r, grad=True)
    grads = backward((y, h), (gc.grad_y.to(device), gc.grad_h.to(device)), [x, r, weight], component="AddRMSNorm")
    missing = [n for n, g in zip(("x", "residual", "weight"), grads, strict=True) if g is None]
    if missing:
        fail(f"AddRMSNorm backward gives no gradient for {', '.join(missing)}")
    return grads


def _measure_one_gradient(dx: torch.Tensor, dr: torch.Tensor) -> None:
    """Record whether dx and d(residual) — one tensor mathematically — were bitwise equal in every example."""
    ctx, name = current(), "dx and d(residual) bitwise equal (every example)"
    seen = ctx.recorder.measurements.get(name, True) if ctx is not None else True
    measure(name, bool(seen and torch.equal(dx, dr)))


@law("AddRMSNorm", cost=2)
@given(data=st.data())
@example(data=PINS["AddRMSNorm, 160 rows"])
@protocols.honoured(protocols.GRADIENT, pin=PINS["every protocol, gradients"])
def add_rmsnorm_gradients_match_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """The backward pass for random cotangents of y and h matches golden.add_rmsnorm_vjp within bounds.add_rmsnorm_vjp:
    x and r receive one gradient, dx = dr = dx_RMSNorm(h) + g_h (each judged), and dγ (pinned at 160 rows) — under
    every gradient protocol (accumulation, cotangent layouts, partial gradients, checkpointing …)."""
    gc = data.draw(S.add_rmsnorm_grad_cases(dtype), label="case")
    note(gc)
    c = gc.case
    grads = _grads(impl, gc, dtype, device)
    gd, gdw = golden.add_rmsnorm_vjp(c.x, c.residual, c.weight, c.eps, gc.grad_y, gc.grad_h)
    bd, bdw = bounds.add_rmsnorm_vjp(c.x, c.residual, c.weight, c.eps, gc.grad_y, gc.grad_h, dtype)
    for what, g, gold, b in (("dx", grads[0], gd, bd), ("d(residual)", grads[1], gd, bd), ("dγ", grads[2], gdw, bdw)):
        assert_matches_golden(g, gold, b, what=what, record=False)  # ULPs of cancelling sums say little
    _measure_one_gradient(grads[0], grads[1])
