"""Drop-in assertions for your own kernel tests, called as ``torch.testing.assert_close`` is called.

    from properties.testing import assert_rmsnorm_close, assert_rmsnorm_grads_close

    def test_my_kernel():
        x = torch.randn(8, 4096, dtype=torch.bfloat16, requires_grad=True)
        w = (torch.rand(4096) + 0.5).to(torch.bfloat16).requires_grad_()
        y = my_rms_norm(x, w, 1e-6)
        assert_rmsnorm_close(y, x, w, eps=1e-6)
        g = torch.randn_like(y)
        y.backward(g)
        assert_rmsnorm_grads_close((x.grad, w.grad), x, w, g, eps=1e-6)

Given the inputs, the weights and the output of *your* call, each assertion computes the golden value (``golden``:
exact / ≥ 100-bit evaluation of the exact float inputs) and the derived bound (``properties.numerics.bounds``: a
formula in the unit roundoffs and the shape that admits every accepted convention), and fails as the laws do
(``properties.library.assertions``): a headline (the assertion, the dtype, the ULP error against the bound at the
worst element and the headroom), then the worst element (golden, actual, allowed), the bound's formula, the input,
and a line that reruns the test. Each returns the max ULP error (for reporting, e.g. in a benchmark).

Options, as ``torch.testing.assert_close`` has them:

* ``msg``: a string — the failure's headline, the assertion's own message below it — or a callable that gets
  the generated message and returns the one to raise;
* ``check_dtype``: True (default) — the output (a gradient) must have the dtype of its input (parameter);
  False — any dtype, judged in the dtype it has (a bf16 input normalised into an fp32 output is judged as fp32);
* ``conventions``: how the kernel says it computes, with the keys of a module's ``CONVENTIONS[component]``
  (``properties.library.conventions``: ``compute_dtype``, ``eps_dtype``, ``weight_offset``, ``flush_subnormals``,
  ``accumulation_dtype`` …): the bound is derived for that arithmetic, so the kernel is judged at the precision
  it declares — not excused (a Liger-style ``casting_mode="none"`` RMSNorm: ``{"compute_dtype": "input"}``).

Gradients: ``assert_rmsnorm_grads_close``, ``assert_swiglu_grads_close`` (golden vector–Jacobian products and their
derived bounds, as the gradient laws) and ``assert_block_grads_close`` (the Block's laws' oracle: the fp64
derivative of the reference, within twice the largest error of the reference computed in the same dtype in
several ways (``properties.library.baselines``) plus a few roundings at its scale: ``bounds.block_vjp``). ``grads`` is
a tuple in the order of the inputs or a mapping by name; a gradient given as None is not checked.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

import golden
from properties.library import baselines, context
from properties.library.assertions import (
    WIDTH,
    assert_close,
    assert_matches_golden,
    assert_output_contract,
    layout,
)
from properties.library.conventions import ConventionError, Conventions, parse
from properties.numerics import bounds

__all__ = [
    "assert_block_close",
    "assert_block_grads_close",
    "assert_rmsnorm_close",
    "assert_rmsnorm_grads_close",
    "assert_swiglu_close",
    "assert_swiglu_grads_close",
]

Msg = str | Callable[[str], str] | None
# pytest prints an assertion's message behind "E" and 7 spaces: wrapped at 72 columns it fits 80 there
_WIDTH = WIDTH - 8


def _repro() -> str:
    """The pytest command that reruns the calling test (from $PYTEST_CURRENT_TEST), else a hint."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    node = current.rsplit(" (", 1)[0]
    return f"pytest {shlex.quote(node)}" if node else "rerun the calling test"


def _declared(component: str, conventions: Mapping[str, Any] | None) -> Conventions | None:
    if conventions is None:
        return None
    try:
        return parse(component, conventions)
    except ConventionError as exc:
        raise ValueError(f"conventions=: {exc}") from None


class _Judged:
    """One assertion call: the context the comparisons record into (the regime, the declared arithmetic), and the
    message the caller asked for (``msg``)."""

    def __init__(self, name: str, component: str, x: torch.Tensor, dtype: torch.dtype, msg: Msg, declared: Any):
        self.name, self.msg, self.declared = name, msg, declared
        device = x.device.type
        self.ctx = context.LawContext(name, component, dtype, device, "-", False, None, _repro(), conventions=declared)

    def __enter__(self) -> _Judged:
        self._open = context.open_context(self.ctx)
        self._open.__enter__()
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        __tracebackhide__ = True
        self._open.__exit__(kind, exc, tb)
        if not isinstance(exc, context.LawFailure):
            return
        extra = [f"declared: {self.declared.summary()}"] if self.declared and self.declared.summary() else []
        headline = f"{self.name} [{self.ctx.dtype_name}, {self.ctx.device}]: {exc.headline}"
        details = [*exc.details, *extra]
        lead = len(f"{type(exc).__module__}.{type(exc).__qualname__}: ")  # pytest prints "Type: " before it
        if self.msg is None or callable(self.msg):
            text = layout(headline, details, exc.reproduce, width=_WIDTH, lead=lead)
            text = self.msg(text) if callable(self.msg) else text
        else:  # the caller's headline, the assertion's below it
            text = layout(str(self.msg), [headline, *details], exc.reproduce, width=_WIDTH, lead=lead)
        failure = type(exc)(text)
        failure.headline, failure.details, failure.reproduce = exc.headline, exc.details, exc.reproduce
        said = f"{self.msg}: " if isinstance(self.msg, str) else ""
        failure.brief = f"{said}{headline} — reproduce: {exc.reproduce}"  # one line (the pytest plugin's summary)
        raise failure from None


def _judgeable(bound: Any, name: str, what: str) -> Any:
    """``bound`` unless it judges no element at all (infinite everywhere): an assertion that checks nothing is an
    error, never a pass."""
    if not np.isfinite(bound.abs).any():
        raise ValueError(
            f"{name}: no element of {what} can be judged: the derived bound is infinite everywhere (an intermediate "
            f"may overflow, or the declared arithmetic admits no bound at this size): {bound.formula}"
        )
    return bound


def _forward(
    name: str,
    component: str,
    actual: torch.Tensor,
    x: torch.Tensor,
    golden_value: Any,
    bound_of: Callable[[torch.dtype], Any],
    *,
    what: str,
    msg: Msg,
    check_dtype: bool,
    conventions: Mapping[str, Any] | None,
    **regime: Any,
) -> float:
    __tracebackhide__ = True
    declared = _declared(component, conventions)
    dtype = x.dtype if check_dtype or not isinstance(actual, torch.Tensor) else actual.dtype
    with _Judged(name, component, x, dtype, msg, declared):
        context.describe(shape=list(x.shape), D=x.shape[-1], **regime)
        assert_output_contract(
            actual, shape=tuple(x.shape), dtype=dtype, device=x.device, what=f"{component} output"
        )  # fmt: skip
        bound = _judgeable(bound_of(dtype), name, what)
        return assert_matches_golden(actual, golden_value(), bound, what=what)


def assert_rmsnorm_close(
    actual: torch.Tensor,
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    msg: Msg = None,
    check_dtype: bool = True,
    conventions: Mapping[str, Any] | None = None,
    what: str = "y",
) -> float:
    """``actual`` = RMSNorm(x; weight, eps) = x / √(mean(x², −1) + eps) ⊙ weight within the derived bound."""
    __tracebackhide__ = True
    return _forward(
        "assert_rmsnorm_close", "RMSNorm", actual, x, lambda: golden.rmsnorm(x, weight, eps),
        lambda dtype: bounds.rmsnorm(x, weight, eps, dtype), what=what, msg=msg, check_dtype=check_dtype,
        conventions=conventions, eps=eps,
    )  # fmt: skip


def assert_swiglu_close(
    actual: torch.Tensor,
    x: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    *,
    msg: Msg = None,
    check_dtype: bool = True,
    conventions: Mapping[str, Any] | None = None,
    what: str = "y",
) -> float:
    """``actual`` = W_down (silu(W_gate x) ⊙ W_up x) within the derived bound (``nn.Linear`` layouts: W_gate, W_up
    (F, D), W_down (D, F))."""
    __tracebackhide__ = True
    return _forward(
        "assert_swiglu_close", "SwiGLU", actual, x, lambda: golden.swiglu(x, w_gate, w_up, w_down),
        lambda dtype: bounds.swiglu(x, w_gate, w_up, w_down, dtype), what=what, msg=msg, check_dtype=check_dtype,
        conventions=conventions, F=w_gate.shape[0],
    )  # fmt: skip


def _state(params: Mapping[str, torch.Tensor] | torch.nn.Module) -> dict[str, torch.Tensor]:
    return params.state_dict() if isinstance(params, torch.nn.Module) else dict(params)


def assert_block_close(
    actual: torch.Tensor,
    x: torch.Tensor,
    params: Mapping[str, torch.Tensor] | torch.nn.Module,
    config: Any,
    *,
    msg: Msg = None,
    check_dtype: bool = True,
    conventions: Mapping[str, Any] | None = None,
    what: str = "out",
) -> float:
    """``actual`` = the contract's pre-norm Block(x) (causal GQA, rotate-half RoPE, SwiGLU) within the derived
    bound; ``params``: the contract's state-dict names (or a module whose ``state_dict()`` has them), ``config``: a
    ``nanolm_core.ModelConfig``."""
    __tracebackhide__ = True
    state = _state(params)
    return _forward(
        "assert_block_close", "Block", actual, x, lambda: golden.block(x, state, config),
        lambda dtype: bounds.block(x, state, config, dtype), what=what, msg=msg, check_dtype=check_dtype,
        conventions=conventions, config=f"H={config.n_heads}, G={config.n_kv_heads}",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------- gradients


def _named(grads: Sequence[Any] | Mapping[str, Any], names: Sequence[str], name: str) -> dict[str, Any]:
    """``grads`` (a tuple in the order of ``names`` or a mapping by name) → {name: gradient}, Nones dropped."""
    if isinstance(grads, Mapping):
        unknown = sorted(set(grads) - set(names))
        if unknown:
            raise ValueError(f"{name}: grads names {unknown}; expected some of {', '.join(names)}")
        given = dict(grads)
    else:
        if isinstance(grads, torch.Tensor) or len(grads) > len(names):
            raise ValueError(f"{name}: grads is a tuple of at most {len(names)} gradients ({', '.join(names)})")
        given = dict(zip(names, grads, strict=False))
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        raise ValueError(f"{name}: grads holds no gradient to check")
    return given


def _gradients(
    name: str,
    component: str,
    given: dict[str, torch.Tensor],
    inputs: dict[str, torch.Tensor],
    x: torch.Tensor,
    judge: Callable[[str, torch.Tensor, torch.dtype], float],
    *,
    msg: Msg,
    check_dtype: bool,
    conventions: Mapping[str, Any] | None,
    **regime: Any,
) -> float:
    """Judge each given gradient (``judge(name, gradient, dtype)``) after the contract's checks: the shape of its
    input and, with ``check_dtype``, its dtype."""
    __tracebackhide__ = True
    declared = _declared(component, conventions)
    dtype = x.dtype if check_dtype else next(iter(given.values())).dtype
    worst = 0.0
    with _Judged(name, component, x, dtype, msg, declared):
        context.describe(shape=list(x.shape), D=x.shape[-1], **regime)
        for key, grad in given.items():
            like = inputs[key]
            want = like.dtype if check_dtype else grad.dtype
            assert_output_contract(grad, shape=tuple(like.shape), dtype=want, device=like.device, what=f"d{key}")
            worst = max(worst, judge(key, grad, dtype))
    return worst


def assert_rmsnorm_grads_close(
    grads: Sequence[torch.Tensor | None] | Mapping[str, torch.Tensor | None],
    x: torch.Tensor,
    weight: torch.Tensor,
    grad_out: torch.Tensor,
    eps: float = 1e-6,
    *,
    msg: Msg = None,
    check_dtype: bool = True,
    conventions: Mapping[str, Any] | None = None,
) -> float:
    """``grads`` = (dx, dweight) of RMSNorm(x; weight, eps) for the cotangent ``grad_out`` (``y.backward(grad_out)``:
    ``x.grad``, ``weight.grad``) within the derived bounds of the golden VJP (``golden.rmsnorm_vjp``,
    ``bounds.rmsnorm_vjp``). A mapping uses the names "x", "weight"."""
    __tracebackhide__ = True
    given = _named(grads, ("x", "weight"), "assert_rmsnorm_grads_close")
    gold = dict(zip(("x", "weight"), golden.rmsnorm_vjp(x, weight, eps, grad_out), strict=True))

    def judge(key: str, grad: torch.Tensor, dtype: torch.dtype) -> float:
        b = dict(zip(("x", "weight"), bounds.rmsnorm_vjp(x, weight, eps, grad_out, dtype), strict=True))
        what = "dx" if key == "x" else "dγ"
        return assert_matches_golden(grad, gold[key], _judgeable(b[key], "assert_rmsnorm_grads_close", what), what=what)

    return _gradients(
        "assert_rmsnorm_grads_close", "RMSNorm", given, {"x": x, "weight": weight}, x, judge, msg=msg,
        check_dtype=check_dtype, conventions=conventions, eps=eps,
    )  # fmt: skip


_SWIGLU = ("x", "w_gate", "w_up", "w_down")


def assert_swiglu_grads_close(
    grads: Sequence[torch.Tensor | None] | Mapping[str, torch.Tensor | None],
    x: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    grad_out: torch.Tensor,
    *,
    msg: Msg = None,
    check_dtype: bool = True,
    conventions: Mapping[str, Any] | None = None,
) -> float:
    """``grads`` = (dx, dW_gate, dW_up, dW_down) of SwiGLU for the cotangent ``grad_out`` within the derived bounds
    of the golden VJP (``golden.swiglu_vjp``, ``bounds.swiglu_vjp``). A mapping uses the names "x", "w_gate",
    "w_up", "w_down"."""
    __tracebackhide__ = True
    given = _named(grads, _SWIGLU, "assert_swiglu_grads_close")
    gold = dict(zip(_SWIGLU, golden.swiglu_vjp(x, w_gate, w_up, w_down, grad_out), strict=True))

    def judge(key: str, grad: torch.Tensor, dtype: torch.dtype) -> float:
        b = dict(zip(_SWIGLU, bounds.swiglu_vjp(x, w_gate, w_up, w_down, grad_out, dtype), strict=True))
        what = "dx" if key == "x" else f"d{key}"
        return assert_matches_golden(grad, gold[key], _judgeable(b[key], "assert_swiglu_grads_close", what), what=what)

    inputs = dict(zip(_SWIGLU, (x, w_gate, w_up, w_down), strict=True))
    return _gradients(
        "assert_swiglu_grads_close", "SwiGLU", given, inputs, x, judge, msg=msg, check_dtype=check_dtype,
        conventions=conventions, F=w_gate.shape[0],
    )  # fmt: skip


def assert_block_grads_close(
    grads: Mapping[str, torch.Tensor | None],
    x: torch.Tensor,
    params: Mapping[str, torch.Tensor] | torch.nn.Module,
    config: Any,
    grad_out: torch.Tensor,
    *,
    msg: Msg = None,
    check_dtype: bool = True,
    conventions: Mapping[str, Any] | None = None,
) -> float:
    """``grads`` = {"x": ∂/∂x, "<state-dict name>": ∂/∂weight …} of the contract's Block for the cotangent
    ``grad_out``, each within ``bounds.block_vjp`` of the fp64 derivative of the reference: twice the largest error
    of the same-dtype baselines (``properties.library.baselines``) + 4·u·max|∂| — the oracle of the Block's
    gradient laws."""
    __tracebackhide__ = True
    state = _state(params)
    given = _named(grads, ("x", *state), "assert_block_grads_close")

    def judge(key: str, grad: torch.Tensor, dtype: torch.dtype) -> float:
        exact, refs = reference[torch.float64][0][key], [r[key] for r in reference[dtype]]
        rows = x.shape[-2] if key == "x" else x.numel() // x.shape[-1]
        b = bounds.block_vjp(refs, exact, config, rows, dtype)
        return assert_close(grad, exact, b, what=f"∂/∂{key} over {rows} rows", expected_name="fp64 derivative")

    dtype = x.dtype if check_dtype else next(iter(given.values())).dtype
    members = {torch.float64: 1, dtype: None}  # the fp64 derivative; every same-dtype baseline
    names = list(state)
    reference = {d: baselines.block_grads(config, state, x, grad_out, d, names, members=n) for d, n in members.items()}
    return _gradients(
        "assert_block_grads_close", "Block", given, {"x": x, **state}, x, judge, msg=msg, check_dtype=check_dtype,
        conventions=conventions, config=f"H={config.n_heads}, G={config.n_kv_heads}",
    )  # fmt: skip
