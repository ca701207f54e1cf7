"""Building and calling the implementation under test per the contract; its failures become law failures.

Modules are constructed with the contract's signature, moved with ``.to(device=, dtype=)``, given their
weights with ``load_state_dict(strict=True)`` under the contract's names and put in eval mode. Anything the
implementation raises while being built, loaded or called is a failed law (AssertionError naming the step), except
``NotImplementedError`` (an exercise stub), which skips the law.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from hypothesis import event
from torch import nn
from torch.autograd.gradcheck import GradcheckError

from properties import registry
from properties.assertions import fail
from properties.impl import Implementation
from properties.registry import StubNotImplemented

__all__ = ["build", "build_block", "build_rmsnorm", "build_swiglu", "call", "note"]


def _guard(step: str, fn: Callable[[], Any]) -> Any:
    __tracebackhide__ = True
    try:
        return fn()
    except NotImplementedError as exc:
        raise StubNotImplemented(f"not implemented: {step} raised NotImplementedError: {exc}") from None
    except (AssertionError, StubNotImplemented):
        raise
    except Exception as exc:
        fail(f"{step} raised {type(exc).__name__}: {exc}")


def build(
    impl: Implementation,
    component: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    state: dict[str, torch.Tensor],
    dtype: torch.dtype,
    device: str,
) -> nn.Module:
    """Construct ``component(*args, **kwargs)``, move it to (device, dtype), load ``state`` strictly."""
    __tracebackhide__ = True
    factory = impl.factory(component)  # NotProvided → skipped by the runner
    sig = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    module = _guard(f"{component}({sig})", lambda: factory(*args, **kwargs))
    if not isinstance(module, nn.Module):
        fail(f"{component}({sig}) returned {type(module).__name__}, not a torch.nn.Module")
    module = _guard(f"{component}.to(device={device!r}, dtype={dtype})", lambda: module.to(device=device, dtype=dtype))
    state = {k: v.to(device=device, dtype=dtype) for k, v in state.items()}
    _guard(
        f"{component}.load_state_dict(strict=True) with keys {sorted(state)}",
        lambda: module.load_state_dict(state, strict=True),
    )
    return module.eval()  # inference numerics: no dropout (the contract's forward has none)


def build_rmsnorm(impl: Implementation, weight: torch.Tensor, eps: float, dtype: torch.dtype, device: str) -> nn.Module:
    """RMSNorm(D, eps=eps) with ``weight`` loaded."""
    return build(impl, "RMSNorm", (weight.shape[-1],), {"eps": eps}, {"weight": weight}, dtype, device)


def build_swiglu(impl: Implementation, params: dict[str, torch.Tensor], dtype: torch.dtype, device: str) -> nn.Module:
    """SwiGLU(D, F) with w_gate / w_up / w_down loaded (``params`` keyed "w_gate.weight", …)."""
    F, D = params["w_gate.weight"].shape
    return build(impl, "SwiGLU", (D, F), {}, params, dtype, device)


def build_block(
    impl: Implementation, config: Any, params: dict[str, torch.Tensor], dtype: torch.dtype, device: str
) -> nn.Module:
    """Block(config) with the contract's state_dict loaded."""
    return build(impl, "Block", (config,), {}, params, dtype, device)


def call(module: nn.Module, x: torch.Tensor, *, component: str = "", grad: bool = False) -> torch.Tensor:
    """module(x) (under no_grad unless ``grad``); failures are the implementation's, stubs skip."""
    __tracebackhide__ = True
    name = component or type(module).__name__

    def run() -> Any:
        if grad:
            return module(x)
        with torch.no_grad():
            return module(x)

    y = _guard(f"{name}.forward(x of shape {tuple(x.shape)}, {x.dtype}, {x.device.type})", run)
    if not isinstance(y, torch.Tensor):
        fail(f"{name}.forward returned {type(y).__name__}, not a torch.Tensor")
    return y


def backward(y: torch.Tensor, grad_out: torch.Tensor, inputs: list[torch.Tensor], *, component: str) -> list[Any]:
    """torch.autograd.grad of y against ``inputs`` with cotangent ``grad_out`` (None where unused)."""
    __tracebackhide__ = True
    if not y.requires_grad:
        fail(f"{component}: output does not require grad (the graph to the inputs was cut)")
    return _guard(f"{component} backward", lambda: list(torch.autograd.grad(y, inputs, grad_out, allow_unused=True)))


def note(case: Any) -> None:
    """Describe the drawn case for messages and the report, and label its regimes as Hypothesis events."""
    info = case.describe()
    registry.describe(**info)
    for key in ("rows", "gamma", "config"):
        if key in info:
            event(f"{key}: {info[key]}")


def rmsnorm_forward(
    impl: Implementation, x: torch.Tensor, weight: torch.Tensor, eps: float, dtype: torch.dtype, device: str
) -> torch.Tensor:
    """y = impl.RMSNorm(D, eps)(x) with ``weight`` loaded; y must keep x's shape, dtype and device."""
    __tracebackhide__ = True
    from properties.assertions import assert_output_contract

    y = call(build_rmsnorm(impl, weight, eps, dtype, device), x.to(device), component="RMSNorm")
    assert_output_contract(y, shape=tuple(x.shape), dtype=dtype, device=device, what="RMSNorm output")
    return y


def swiglu_forward(
    impl: Implementation, x: torch.Tensor, params: dict[str, torch.Tensor], dtype: torch.dtype, device: str
) -> torch.Tensor:
    """y = impl.SwiGLU(D, F)(x) with ``params`` loaded; y must keep x's shape, dtype and device."""
    __tracebackhide__ = True
    from properties.assertions import assert_output_contract

    y = call(build_swiglu(impl, params, dtype, device), x.to(device), component="SwiGLU")
    assert_output_contract(y, shape=tuple(x.shape), dtype=dtype, device=device, what="SwiGLU output")
    return y


def block_forward(
    impl: Implementation, x: torch.Tensor, config: Any, params: dict[str, torch.Tensor], dtype: torch.dtype, device: str
) -> torch.Tensor:
    """y = impl.Block(config)(x) with ``params`` loaded; y must keep x's shape, dtype and device."""
    __tracebackhide__ = True
    from properties.assertions import assert_output_contract

    y = call(build_block(impl, config, params, dtype, device), x.to(device), component="Block")
    assert_output_contract(y, shape=tuple(x.shape), dtype=dtype, device=device, what="Block output")
    return y


def gradcheck(fn: Callable[..., torch.Tensor], inputs: tuple[torch.Tensor, ...], *, component: str) -> None:
    """torch.autograd.gradcheck (fp64, finite differences); a mismatch is the implementation's failure."""
    __tracebackhide__ = True
    try:
        ok = torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, fast_mode=True, raise_exception=True)
    except NotImplementedError as exc:
        raise StubNotImplemented(f"not implemented: {component} backward: {exc}") from None
    except GradcheckError as exc:
        fail(f"{component}: fp64 gradcheck failed (analytical ≠ numerical Jacobian): {str(exc)[:800]}")
    except Exception as exc:
        fail(f"{component}: backward raised {type(exc).__name__}: {exc}")
    if not ok:
        fail(f"{component}: fp64 gradcheck failed")
