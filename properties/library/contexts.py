"""The context a framework sets around a call, as plain data, and the one function that applies it.

Frameworks call a module inside settings that are global to the thread: autocast (mixed-precision training and
serving wrap the forward in ``torch.autocast``), deterministic-algorithm mode (``torch.use_deterministic_algorithms``,
reproducible training), the intra-op thread count (``torch.set_num_threads``: data loaders, servers pinning cores),
and the grad mode (training records a graph; evaluation runs under ``torch.no_grad()``; serving under
``torch.inference_mode()``). Kernels branch on every one of them — work split by thread count, a deterministic
fallback path, ``custom_fwd`` casts under autocast, an inference fast path — and the bugs live on the branch a
test did not take.

A :class:`CallContext` names one such setting of each (``None``: as the law calls: the run's own thread count,
no autocast, the law's grad mode). It is data — a frozen dataclass of strings, booleans and ints, with
:meth:`CallContext.as_data` / :meth:`CallContext.of` for a process boundary — so the verifier can hand it to the
process that runs the subject, where :func:`applied` sets it around exactly one forward call (the harness does:
``harness.Ops.run``). A law opts in with :func:`within` (the context of the calls made inside the block).

What the contract accepts under a context (docs/laws.md, "The axes of a call"): threads, deterministic mode and
grad modes change nothing the module must compute — the law's golden value and bound stand. Autocast changes the
precision the framework asks for: an op autocast lists (matmul, linear) may run in the autocast dtype, so an
output is in the input dtype or in the autocast dtype, and it is judged against the golden value of the inputs
(values exact in the autocast dtype, so autocast's own cast is exact) within the bound of the autocast dtype.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import sys
from collections.abc import Iterator
from typing import Any

import torch

from golden.formats import fmt
from properties.library import state

__all__ = ["GRAD_MODES", "PLAIN", "CallContext", "applied", "current", "within"]

GRAD_MODES = ("enabled", "no_grad", "inference")  # autograd recording, torch.no_grad(), torch.inference_mode()


@dataclasses.dataclass(frozen=True)
class CallContext:
    """One setting of the global context around a call (``None``: left as the law has it).

    ``autocast``       None, or the dtype name autocast runs in ("bf16", "fp16") on the input's device type
    ``deterministic``  None, or the value of ``torch.use_deterministic_algorithms`` during the call
    ``threads``        None, or the intra-op thread count during the call
    ``grad``           None (the law's own: ``no_grad`` for a forward law, recording for a gradient law), or one of
                       :data:`GRAD_MODES`
    """

    autocast: str | None = None
    deterministic: bool | None = None
    threads: int | None = None
    grad: str | None = None

    def __post_init__(self) -> None:
        if self.autocast is not None:
            fmt(self.autocast)  # a clear error for an unknown dtype name
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(f"CallContext: threads must be a positive int or None, got {self.threads!r}")
        if self.grad is not None and self.grad not in GRAD_MODES:
            raise ValueError(f"CallContext: grad must be one of {GRAD_MODES} or None, got {self.grad!r}")

    def as_data(self) -> dict[str, Any]:
        """The context as a JSON-able dict (what crosses a process boundary)."""
        return dataclasses.asdict(self)

    @classmethod
    def of(cls, data: dict[str, Any] | None) -> CallContext:
        """The context a dict from :meth:`as_data` describes (None: :data:`PLAIN`)."""
        return PLAIN if data is None else cls(**data)

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return None if self.autocast is None else fmt(self.autocast).dtype

    def __str__(self) -> str:
        parts = []
        if self.autocast is not None:
            parts.append(f"autocast {self.autocast}")
        if self.deterministic is not None:
            parts.append(f"deterministic algorithms {'on' if self.deterministic else 'off'}")
        if self.threads is not None:
            parts.append(f"{self.threads} thread{'s' if self.threads > 1 else ''}")
        if self.grad is not None:
            parts.append(
                {"enabled": "autograd recording", "no_grad": "torch.no_grad()"}.get(self.grad, "inference_mode")
            )
        return ", ".join(parts) or "as the law calls"


PLAIN = CallContext()

_CURRENT: contextvars.ContextVar[CallContext] = contextvars.ContextVar("nanolm_call_context", default=PLAIN)


def current() -> CallContext:
    """The context the calls made now are to run in (:data:`PLAIN` outside :func:`within`)."""
    return _CURRENT.get()


@contextlib.contextmanager
def within(ctx: CallContext) -> Iterator[CallContext]:
    """Every subject call the harness makes inside the block runs under ``ctx`` (applied by :func:`applied`)."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def applied(ctx: CallContext, device_type: str = "cpu") -> Iterator[None]:
    """Set ``ctx`` around the block (one call of the subject) and put back, after it, every setting this function
    changed — unless the subject changed it again during the call: that value is left for the harness's guard
    (``state``), which reports the change against the subject and restores it."""
    if ctx == PLAIN:
        yield
        return
    names = {"deterministic algorithms": ctx.deterministic, "torch threads": ctx.threads}
    wanted = {s.name: (s, v) for s in state.SETTINGS if (v := names.get(s.name)) is not None}
    before = {name: s.get() for name, (s, _) in wanted.items()}
    wanted = {name: sv for name, sv in wanted.items() if before[name] != sv[1]}  # (one already so: nothing to do)
    setters = {name: _SETTERS.get(name, s.set) for name, (s, _) in wanted.items()}
    with contextlib.ExitStack() as stack:
        for name, (_, value) in wanted.items():
            setters[name](value)
        set_to = {name: s.get() for name, (s, _) in wanted.items()}
        if ctx.autocast is not None:
            stack.enter_context(torch.autocast(device_type, dtype=ctx.autocast_dtype))
        if ctx.grad == "inference":
            stack.enter_context(torch.inference_mode())
        elif ctx.grad is not None:
            stack.enter_context(torch.set_grad_enabled(ctx.grad == "enabled"))
        try:
            yield
        finally:
            for name, (s, _) in wanted.items():
                if s.get() == set_to[name]:  # not changed by the subject: ours to put back
                    setters[name](before[name])


def _deterministic(mode: bool) -> None:
    """``torch.use_deterministic_algorithms(mode)`` — whose first call imports torch._inductor's config (~840 modules,
    seconds) to mirror the flag there — without that import where nothing has imported inductor (no compiled kernel
    can read its copy of the flag then); the flag kernels read, ``torch.are_deterministic_algorithms_enabled()``, is
    set either way."""
    if "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(mode)
    else:
        torch._C._set_deterministic_algorithms(mode)


_SETTERS = {"deterministic algorithms": _deterministic}
