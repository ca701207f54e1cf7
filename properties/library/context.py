"""The run-time context of a law: what is being checked, where, under which profile, and what was measured.

The runner (``properties.running.runner``) opens a :class:`LawContext` around one law × dtype × device run;
the assertion helpers and strategies below it read it through :func:`current` and record into it
(:func:`describe`, :func:`record_error`, :func:`measure`, :func:`count_examples`). Outside a run every
function here is a no-op, so a law can also be called directly.

Failures carry a *cause* — the reason a result failed, which the proof-of-power tests check:

    law        the law's own assertion (:class:`LawFailure`, raised by ``assertions.fail``)
    contract   the subject cannot be built, moved, loaded or called per the contract, or returns something
               that is not an output of the contract's shape, dtype and device (:class:`ContractFailure`)
    crash      an exception inside the subject's code (:class:`SubjectCrash`)
    timeout    the subject ran past the per-law time limit (set by the runner)
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import statistics
import unittest
import weakref
from collections.abc import Iterator
from typing import Any

import torch

from golden.formats import fmt
from properties.library.conventions import Conventions
from properties.numerics import bounds

__all__ = [
    "CAUSES",
    "ContractFailure",
    "LawContext",
    "LawFailure",
    "NotApplicable",
    "Recorder",
    "StubNotImplemented",
    "SubjectCrash",
    "SuiteDataError",
    "count_examples",
    "current",
    "describe",
    "jsonable",
    "measure",
    "open_context",
    "record_build",
    "record_call",
    "record_error",
    "record_headroom",
    "record_mismatch",
    "record_output",
]

CAUSES = ("law", "contract", "crash", "timeout")


class LawFailure(AssertionError):
    """The law does not hold (cause "law")."""

    cause = "law"


class ContractFailure(LawFailure):
    """The subject cannot be built, loaded, moved or called per the contract (cause "contract")."""

    cause = "contract"


class SubjectCrash(LawFailure):
    """An exception raised inside the subject's own code (cause "crash")."""

    cause = "crash"


class SuiteDataError(Exception):
    """The suite cannot judge: its own data (the stored golden corpus) failed verification. One line, no traceback;
    the result is an error of the suite (status "error"), never a pass."""


class StubNotImplemented(unittest.SkipTest):
    """The implementation raised NotImplementedError (an exercise stub): skipped, never shrunk."""


class NotApplicable(unittest.SkipTest):
    """The law does not apply to this implementation / dtype / device (skipped with the reason)."""


@dataclasses.dataclass
class Recorder:
    """What the assertion helpers saw over all examples of one run."""

    examples: int = 0
    first_failure: int | None = None
    last_failure: AssertionError | None = None  # the latest failing example's failure: the smallest so far
    max_ulp: float | None = None
    p99_ulp: float | None = None
    worst_input: dict[str, Any] | None = None
    failing_input: dict[str, Any] | None = None
    headroom: float | None = None  # max error ÷ bound over the run's comparisons (≤ 1 passes)
    headrooms: list[float] = dataclasses.field(default_factory=list)  # each finished example's headroom
    example_headroom: float | None = None  # max error ÷ bound over the current example's comparisons
    bound: dict[str, Any] | None = None  # the bound where that maximum was reached: abs, ulps, formula
    current_input: dict[str, Any] = dataclasses.field(default_factory=dict)
    draws: list[tuple[str | None, Any]] = dataclasses.field(default_factory=list)  # this example's data.draw()s
    calls: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # what this example passed the subject
    failing_draws: list[tuple[str | None, Any]] | None = None  # the draws and calls of the latest failing example
    failing_calls: list[dict[str, Any]] | None = None
    mismatch: dict[str, Any] | None = None  # this example's failed comparison: what, actual values, worst index
    failing_mismatch: dict[str, Any] | None = None
    modules: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)  # id(module) → how it was built
    outputs: list[tuple[Any, int | None]] = dataclasses.field(
        default_factory=list
    )  # this example's results: weakref, storage
    measurements: dict[str, Any] = dataclasses.field(default_factory=dict)

    def begin_example(self) -> None:
        self.end_example()
        self.examples += 1
        self.current_input = {}
        self.draws, self.calls = [], []
        self.mismatch, self.modules, self.outputs = None, {}, []

    def end_example(self) -> None:
        """Close the current example's headroom (the max over its comparisons) into ``headrooms``."""
        if self.example_headroom is not None:
            self.headrooms.append(self.example_headroom)
        self.example_headroom = None

    @property
    def headroom_median(self) -> float | None:
        """The median over examples of each example's headroom: how much of the bound a *typical* case uses.
        Its inverse is the slack (how many times a correct implementation's error the bound allows)."""
        self.end_example()
        return float(statistics.median(self.headrooms)) if self.headrooms else None

    def fail_example(self, failure: AssertionError | None = None) -> None:
        if self.first_failure is None:
            self.first_failure = self.examples
        self.failing_input = dict(self.current_input)
        self.failing_draws, self.failing_calls = list(self.draws), list(self.calls)
        self.failing_mismatch = self.mismatch
        self.last_failure = failure


@dataclasses.dataclass
class LawContext:
    """One law × dtype × device run in progress: set by the runner, read by assertions and strategies."""

    law_id: str
    component: str
    dtype: torch.dtype
    device: str
    profile: str
    slow: bool  # the profile draws the slow (large-size) tier
    seed: int | None
    repro: str  # one command line that reproduces this run
    recorder: Recorder = dataclasses.field(default_factory=Recorder)
    conventions: Conventions | None = None  # what the component declares: the bounds honour it (open_context)
    case_budget: float | None = None  # the profile's seconds per code-path case (laws/paths.py; None: every case runs)

    @property
    def dtype_name(self) -> str:
        return fmt(self.dtype).name

    def regime(self, **extra: Any) -> str:
        """ "[RMSNorm, bf16, D=123, cpu, rows: eps-dominated]" from the context and the current input."""
        fields = {**self.recorder.current_input, **extra}
        parts = [self.component, self.dtype_name]
        parts += [f"{k}={v}" for k, v in fields.items() if k in ("D", "F", "shape", "config")]
        parts.append(self.device)
        parts += [f"{k}: {v}" for k, v in fields.items() if k not in ("D", "F", "shape", "config")]
        return "[" + ", ".join(parts) + "]"


_CONTEXT: contextvars.ContextVar[LawContext | None] = contextvars.ContextVar("nanolm_law", default=None)


def current() -> LawContext | None:
    """The law run in progress (None when a law function is called outside a run)."""
    return _CONTEXT.get()


@contextlib.contextmanager
def open_context(ctx: LawContext) -> Iterator[LawContext]:
    """Make ``ctx`` the current run for the duration of the block; every bound computed inside honours the
    component's declared arithmetic (``Conventions.arithmetic``, ``bounds.declared``) and carries its value without
    each declaration that departs in the run's dtype (``bounds.shadowed``: "headroom without" measurements)."""
    token = _CONTEXT.set(ctx)
    try:  # each bound also carries its value without each departing declaration: was it needed? (``shadowed``)
        c = ctx.conventions  # (inside: a declaration that cannot be read leaves no run in progress behind)
        without = {key: c.without(key, ctx.dtype).arithmetic() for key in c.departing(ctx.dtype)} if c else {}
        with bounds.declared(c.arithmetic() if c is not None else None), bounds.shadowed(without):
            yield ctx
    finally:
        _CONTEXT.reset(token)


def describe(**fields: Any) -> None:
    """Describe the current example's input (shape, D, regime …): used in messages and as worst_input."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        ctx.recorder.current_input.update({k: jsonable(v) for k, v in fields.items()})


def record_error(max_ulp: float, p99_ulp: float | None = None, **where: Any) -> None:
    """Record one comparison's ULP error; the run keeps the maximum and the input that produced it."""
    ctx = _CONTEXT.get()
    if ctx is None or max_ulp is None or math.isnan(max_ulp):
        return
    rec = ctx.recorder
    if rec.max_ulp is None or max_ulp > rec.max_ulp:
        rec.max_ulp = float(max_ulp)
        rec.worst_input = {**rec.current_input, **{k: jsonable(v) for k, v in where.items()}}
    if p99_ulp is not None and not math.isnan(p99_ulp):
        rec.p99_ulp = float(p99_ulp) if rec.p99_ulp is None else max(rec.p99_ulp, float(p99_ulp))


def record_headroom(headroom: float, **bound: Any) -> None:
    """Record one comparison's headroom (max error ÷ bound); the run keeps the maximum and its bound."""
    ctx = _CONTEXT.get()
    if ctx is None or headroom is None or math.isnan(headroom):
        return
    rec = ctx.recorder
    if rec.headroom is None or headroom > rec.headroom:
        rec.headroom = float(headroom)
        rec.bound = {k: jsonable(v) for k, v in bound.items()}
    if rec.example_headroom is None or headroom > rec.example_headroom:
        rec.example_headroom = float(headroom)


_CALLS_KEPT = 4  # calls of one example whose tensors a counterexample file keeps: the first three and the latest
_STORAGE_KEPT = 1 << 20  # elements of a strided input's storage kept (the layouts' buffers are small)


def record_build(module: Any, component: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Remember how the harness built ``module`` (its constructor arguments) for the calls recorded on it."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        rec = ctx.recorder
        rec.modules[id(module)] = {"component": component, "args": args, "kwargs": dict(kwargs), "n": len(rec.modules)}


def record_call(component: str, x: torch.Tensor, module: Any, **inputs: torch.Tensor) -> dict[str, Any] | None:
    """Keep copies of the input (and further named ``inputs``: AddRMSNorm's residual) and the weights the harness
    passes the subject, how the module was built and, for an input that is a view, its layout and storage (for
    counterexample files and the diagnosis of a failure). Returns the record (``record_output`` adds the result to
    it), None outside a run."""
    ctx = _CONTEXT.get()
    if ctx is None:
        return None
    try:
        state = {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items() if torch.is_tensor(v)}
    except Exception:  # the subject's state_dict is its own business: the law reports what the subject does
        state = {}
    kept = {name: t.detach().to("cpu", copy=True) for name, t in {"x": x, **inputs}.items()}
    entry: dict[str, Any] = {"component": component, **kept, "state": state}
    built = ctx.recorder.modules.get(id(module))
    if built is not None:
        entry.update(args=built["args"], kwargs=built["kwargs"], module=built["n"])
    if not x.is_contiguous() and x.untyped_storage().nbytes() <= _STORAGE_KEPT * x.element_size():
        n = x.untyped_storage().nbytes() // x.element_size()
        whole = torch.as_strided(x.detach(), (n,), (1,), 0).to("cpu", copy=True)  # every element of the storage
        entry["layout"] = {"stride": tuple(x.stride()), "offset": x.storage_offset(), "storage": whole}
    calls = ctx.recorder.calls
    if len(calls) >= _CALLS_KEPT:
        calls.pop()  # the latest call replaces the previous latest: the failing call is the last one made
    calls.append(entry)
    return entry


def record_output(entry: dict[str, Any] | None, y: Any) -> None:
    """Add a copy of the subject's result to its recorded call (``record_call``) — AddRMSNorm's pair as
    ``outputs`` — and note when a result is the very memory of an earlier result of the example that is still held
    (``aliases``: that result's number)."""
    ctx = _CONTEXT.get()
    if entry is None or ctx is None:
        return
    if isinstance(y, (tuple, list)) and y and all(isinstance(t, torch.Tensor) for t in y):
        entry["outputs"] = tuple(t.detach().to("cpu", copy=True) for t in y)  # AddRMSNorm's (y, h)
        return
    if not isinstance(y, torch.Tensor):
        return
    entry["y"] = y.detach().to("cpu", copy=True)
    held, ptr = ctx.recorder.outputs, y.untyped_storage().data_ptr() if y.numel() else None
    same = [n for n, (ref, p) in enumerate(held, 1) if ptr is not None and p == ptr and ref() is not None]
    if same:
        entry["aliases"] = same[0]
    held.append((weakref.ref(y), ptr))


def record_mismatch(what: str, actual: Any, index: tuple[int, ...]) -> None:
    """Remember the comparison that failed in this example: its name, the values compared and the worst index."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        ctx.recorder.mismatch = {"what": what, "actual": actual, "index": index}


def count_examples(n: int) -> None:
    """Add ``n`` checked examples (laws that enumerate their inputs instead of drawing them)."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        ctx.recorder.end_example()  # each enumerated case is an example of its own (headroom_median)
        ctx.recorder.examples += n


def measure(name: str, value: Any) -> None:
    """Record a named measurement (reported, not judged), e.g. gradient-norm ratios or batch variance."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        ctx.recorder.measurements[name] = jsonable(value)


def jsonable(value: Any) -> Any:
    """A JSON-able rendering: non-finite floats as strings, small tensors as lists, dtypes by name."""
    if isinstance(value, float):  # (numpy's float64 too: a plain float, which any serializer takes)
        return float(value) if math.isfinite(value) else repr(float(value))
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, torch.dtype):
        try:
            return fmt(value).name
        except ValueError:
            return str(value)
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().double().tolist() if value.numel() <= 64 else f"tensor{tuple(value.shape)}"
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)
