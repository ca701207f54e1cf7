"""Building and calling the implementation under test per the contract; its failures become law failures.

Modules are constructed with the contract's signature, moved with ``.to(device=, dtype=)``, given their
weights with ``load_state_dict(strict=True)`` under the contract's names and put in eval mode. What the
implementation raises is attributed (``context`` causes): while being built, moved or loaded → ``contract``;
while running forward or backward → ``crash``; ``NotImplementedError`` (an exercise stub) skips the law, and so
does ``DtypeNotSupported`` (``properties.adapters.kit``: a real kernel without that dtype), with its own reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
from hypothesis import event
from torch import nn
from torch.autograd.gradcheck import GradcheckError

from properties.adapters.kit import DtypeNotSupported
from properties.library import context, contexts, protocols, remote, state
from properties.library.assertions import fail
from properties.library.context import NotApplicable, StubNotImplemented

__all__ = [
    "Ops",
    "backward",
    "build",
    "call",
    "gradcheck",
    "note",
    "reload",
    "update_in_place",
]


# The implementation under test (``properties.library.subject.Implementation``). Not imported: the component records
# (``components``) build through this module and ``subject`` reads the records, so an import would close a cycle.
Implementation = Any

GRADCHECK_STEP, GRADCHECK_ATOL = 1e-6, 1e-5  # the finite-difference step and absolute tolerance of gradcheck


def guard(step: str, fn: Callable[[], Any], cause: str) -> Any:
    """fn(); an exception it raises is a failure of ``cause`` naming ``step`` (NotImplementedError: skipped).

    A change of torch's global state during the call (grad mode, default dtype, flush-denormal, threads …) is a
    contract failure naming the setting; the state is restored first, so nothing that runs later is blamed.
    """
    __tracebackhide__ = True
    before, mark = state.snapshot(), state.reported()
    try:
        out = fn()
    except DtypeNotSupported as exc:
        raise NotApplicable(f"dtype not supported: {step}: {exc}") from None
    except NotImplementedError as exc:
        raise StubNotImplemented(f"not implemented: {step} raised NotImplementedError: {exc}") from None
    except (AssertionError, StubNotImplemented):
        raise
    except Exception as exc:  # (one raised in the subject's process carries the subject's name for it)
        fail(f"{step} raised {getattr(exc, 'remote_type', type(exc).__name__)}: {exc}", cause)
    finally:
        changed = state.put_back(before) + state.reported(mark)
    if changed:
        fail(f"{step} changed torch's global state: {'; '.join(changed)} (restored)", "contract")
    return out


def construct(
    impl: Implementation,
    component: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    dtype: torch.dtype,
    device: str,
    values: dict[str, torch.Tensor] | None = None,
    *,
    evaluate: bool = False,
) -> nn.Module:
    """``component(*args, **kwargs)`` moved to (device, dtype), ``values`` loaded strictly where given, eval()
    where ``evaluate`` (NotProvided → skipped). Each step but eval is guarded under its own name. A component of
    the subject's process takes every step in one request (``remote.Build``), each guard replaying its own step."""
    __tracebackhide__ = True
    factory = impl.factory(component)  # NotProvided → skipped by the runner
    steps = (remote.Build if isinstance(factory, remote.Factory) else _Steps)(
        factory, args, kwargs, device, dtype, values, evaluate
    )
    sig = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    module = guard(f"{component}({sig})", steps.construct, "contract")
    if not isinstance(module, nn.Module):
        fail(f"{component}({sig}) returned {type(module).__name__}, not a torch.nn.Module", "contract")
    moved = guard(f"{component}.to(device={device!r}, dtype={dtype})", steps.to, "contract")
    context.record_build(moved, component, args, kwargs)  # how it was built, for the diagnosis of a failure
    if values is not None:
        step = f"{component}.load_state_dict(strict=True) with keys {sorted(values)}"
        guard(step, steps.load_state_dict, "contract")
    return steps.eval() if evaluate else moved


class _Steps:
    """The steps of :func:`construct` taken in this process, one by one (``remote.Build``: the subject's)."""

    def __init__(
        self, factory: Callable[..., Any], args: tuple, kwargs: dict, device: str, dtype: torch.dtype,
        values: dict[str, torch.Tensor] | None, evaluate: bool,
    ) -> None:  # fmt: skip
        self.factory, self.args, self.kwargs, self.device, self.dtype, self.values = (
            factory, args, kwargs, device, dtype, values
        )  # fmt: skip
        self.module: Any = None

    def construct(self) -> Any:
        self.module = self.factory(*self.args, **self.kwargs)
        return self.module

    def to(self) -> Any:
        self.module = self.module.to(device=self.device, dtype=self.dtype)
        return self.module

    def load_state_dict(self) -> Any:
        return self.module.load_state_dict(self.values, strict=True)

    def eval(self) -> Any:
        return self.module.eval()


def build(
    impl: Implementation,
    component: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    state: dict[str, torch.Tensor],
    dtype: torch.dtype,
    device: str,
    *,
    wrap: Callable[[nn.Module], nn.Module] | None = None,
) -> nn.Module:
    """Construct ``component(*args, **kwargs)``, move it to (device, dtype), load ``state`` strictly, eval();
    ``wrap`` the result (how the laws see it). Under a call protocol (``protocols.session()``) the protocol builds
    it — and may build more instances the same way — and the module is registered as a subject of the protocol."""
    __tracebackhide__ = True

    def make(d: torch.dtype, values: dict[str, torch.Tensor], load: bool = True) -> nn.Module:
        loaded = {k: v.to(device=device, dtype=d) for k, v in values.items()} if load else None
        module = construct(impl, component, args, kwargs, d, device, loaded, evaluate=True)  # eval: inference numerics
        return wrap(module) if wrap is not None else module

    s = protocols.session()
    if s is None:
        return make(dtype, state)
    spec = protocols.Spec(
        component, dtype, device, state, make, lambda what, fn: guard(f"{component}: {what}", fn, "contract")
    )
    module = s.protocol.build(s, spec)
    s.register(module, spec)
    return module


def reload(module: nn.Module, state: dict[str, torch.Tensor], dtype: torch.dtype, device: str, component: str) -> None:
    """``module.load_state_dict(state, strict=True)`` on a module already built and called (new weights)."""
    __tracebackhide__ = True
    state = {k: v.to(device=device, dtype=dtype) for k, v in state.items()}
    step = f"{component}.load_state_dict(strict=True) on a module already called, keys {sorted(state)}"
    guard(step, lambda: module.load_state_dict(state, strict=True), "contract")


def update_in_place(module: nn.Module, state: dict[str, torch.Tensor], component: str) -> None:
    """``with torch.no_grad(): p.copy_(v)`` for each named parameter: an optimizer-style in-place weight update."""
    __tracebackhide__ = True
    params = dict(module.named_parameters())

    def copy() -> None:
        with torch.no_grad():
            for name, value in state.items():
                params[name].copy_(value.to(params[name].device))
        if isinstance(module, remote.RemoteModule):  # the subject's module makes the same update now
            module._sync()

    guard(f"{component}: in-place update of {sorted(state)} (no_grad copy_)", copy, "contract")


class Ops(protocols.Ops):
    """The guarded steps a call protocol is made of (``protocols.Ops``): what the subject raises is its crash,
    a changed global setting its contract failure; stubs skip."""

    def __init__(self, component: str) -> None:
        self.component = component

    def step(self, what: str, fn: Callable[[], Any], cause: str = "contract") -> Any:
        __tracebackhide__ = True
        return guard(f"{self.component}: {what}", fn, cause)

    def run(
        self,
        module: nn.Module,
        inputs: tuple[torch.Tensor, ...],
        *,
        grad: bool,
        inference: bool = False,
        via: Callable[..., Any] | None = None,
    ) -> Any:
        __tracebackhide__ = True

        setting = contexts.current()  # the context a framework sets around the call (data: ``contexts``)

        def forward() -> Any:
            with contexts.applied(setting, inputs[0].device.type):
                if setting.grad is not None:  # the context's grad mode, set by ``applied``
                    return via(module, *inputs) if via is not None else module(*inputs)
                if inference:
                    with torch.inference_mode():
                        return module(*inputs)
                with torch.set_grad_enabled(grad):
                    return via(module, *inputs) if via is not None else module(*inputs)

        more = {f"input_{i}": t for i, t in enumerate(inputs[1:], 1)}  # AddRMSNorm's residual: input_1
        entry = context.record_call(self.component, inputs[0], module, **more)  # the exact tensors, for a replay
        if entry is not None and setting != contexts.PLAIN:
            entry["context"] = setting.as_data()  # what the output may be, judged: its dtype under autocast
        shapes = ", ".join(f"{tuple(t.shape)}" for t in inputs)
        y = guard(
            f"{self.component}.forward(inputs of shape {shapes}, {inputs[0].dtype}, {inputs[0].device.type})",
            forward,
            "crash",
        )
        if not (
            isinstance(y, torch.Tensor)
            or (isinstance(y, (tuple, list)) and y and all(isinstance(t, torch.Tensor) for t in y))
        ):
            fail(
                f"{self.component}.forward returned {type(y).__name__}, not a torch.Tensor (or a tuple of them)",
                "contract",
            )
        context.record_output(entry, y)
        return y

    def grad(self, outputs: protocols.Outputs, wrt: Any, cotangents: protocols.Outputs) -> list[Any]:
        __tracebackhide__ = True
        outputs, cotangents = _differentiable(outputs, cotangents)
        if not outputs:  # no output depends on anything that requires grad (e.g. h = x + r with x, r detached)
            return [None] * len(wrt)
        what = f"{self.component} backward"
        return guard(
            what, lambda: list(torch.autograd.grad(outputs, list(wrt), cotangents, allow_unused=True)), "crash"
        )

    def backward(self, outputs: protocols.Outputs, cotangents: protocols.Outputs) -> None:
        __tracebackhide__ = True
        outputs, cotangents = _differentiable(outputs, cotangents)
        if outputs:
            step = f"{self.component} backward (.backward())"
            guard(step, lambda: torch.autograd.backward(outputs, cotangents), "crash")


def _differentiable(outputs: protocols.Outputs, cotangents: protocols.Outputs) -> tuple[tuple, tuple]:
    """The (output, cotangent) pairs whose output is in the graph: one that is not contributes nothing."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents, strict=True) if o.requires_grad]
    return tuple(o for o, _ in pairs), tuple(c for _, c in pairs)


def call(module: nn.Module, *inputs: torch.Tensor, component: str = "", grad: bool = False) -> Any:
    """module(*inputs) (under no_grad unless ``grad``) — or, for a module built under a call protocol, as the
    protocol calls it. What the module raises is its crash; stubs skip. Returns what the module returned."""
    __tracebackhide__ = True
    ops = Ops(component or type(module).__name__)
    s = protocols.session()
    if s is None or s.spec(module) is None:
        return ops.run(module, inputs, grad=grad)
    y = s.protocol.forward(s, ops, module, inputs, grad)
    s.remember(protocols.Call(module, inputs, protocols.flat(y)))
    return y


def backward(y: Any, grad_out: Any, inputs: list[torch.Tensor], *, component: str) -> list[Any]:
    """The gradients of y (a tensor or a tuple of them) against ``inputs`` for cotangent ``grad_out`` (None where
    unused): torch.autograd.grad — or, for an output of a call under a protocol, as the protocol differentiates."""
    __tracebackhide__ = True
    outputs, cotangents = protocols.flat(y), protocols.flat(grad_out)
    if not any(o.requires_grad for o in outputs):
        fail(f"{component}: output does not require grad (the graph to the inputs was cut)")
    ops, s = Ops(component), protocols.session()
    made = s.call_of(y) if s is not None else None
    if made is None:
        return ops.grad(outputs, inputs, cotangents)
    return s.protocol.grads(s, ops, made, cotangents, inputs)


def note(case: Any) -> None:
    """Describe the drawn case for messages and the report, and label its regimes as Hypothesis events."""
    info = case.describe()
    context.describe(**info)
    for key in ("rows", "gamma", "config"):
        if key in info:
            event(f"{key}: {info[key]}")


# What each order of check is called, what a mismatch means, and which pass a stub leaves unwritten / raised.
_ORDERS = {
    1: ("gradcheck", "analytical ≠ numerical Jacobian", "backward", "forward or backward"),
    2: ("gradgradcheck", "second derivative ≠ finite differences of the first", "double backward", "double backward"),
}
_NO_FORMULA = re.compile(r"derivative for aten::\w+ is not implemented")  # torch's own op lacks a double backward


def gradcheck(
    fn: Callable[..., Any],
    inputs: tuple[torch.Tensor, ...],
    *,
    component: str,
    module: nn.Module | None = None,
    order: int = 1,
    what: str = "",
) -> None:
    """torch.autograd.gradcheck (``order`` 1) or gradgradcheck (2: finite differences of the first derivative), in
    fp64; a mismatch — for order 2 also a first derivative that is not itself differentiable — is the
    implementation's failure (cause law), what the subject raises its crash. ``what``: the output(s) checked.
    ``module`` (whose forward ``fn`` evaluates at ``inputs``): on a mismatch it is called once more on x, so the
    diagnosis sees the forward whose finite differences were taken (an fp32 forward's are rounding noise)."""
    __tracebackhide__ = True
    name, mismatch, stage, raised = _ORDERS[order]
    check = torch.autograd.gradcheck if order == 1 else torch.autograd.gradgradcheck
    of = f" of {what}" if what else ""
    try:
        ok = check(fn, inputs, eps=GRADCHECK_STEP, atol=GRADCHECK_ATOL, rtol=1e-3, fast_mode=True, raise_exception=True)
    except DtypeNotSupported as exc:
        raise NotApplicable(f"dtype not supported: {component}: {exc}") from None
    except NotImplementedError as exc:
        raise StubNotImplemented(f"not implemented: {component} {stage}: {exc}") from None
    except GradcheckError as exc:
        if module is not None:
            call(module, inputs[0].detach(), component=component)
        fail(f"{component}: fp64 {name}{of} failed ({mismatch}): {str(exc)[:800]}")
    except AssertionError:
        raise
    except Exception as exc:
        if order == 2 and isinstance(exc, RuntimeError) and _NO_FORMULA.search(str(exc)):
            raise NotApplicable(f"double backward not supported by torch: {component}: {exc}") from None
        fail(f"{component}: {raised}{of} raised {type(exc).__name__}: {exc}", "crash")
    if not ok:
        fail(f"{component}: fp64 {name}{of} failed")
