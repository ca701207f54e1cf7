"""The law registry: ``@law`` registration, ``run_law`` → ``LawResult``, and the metric recorder.

A law is a function ``(impl, dtype, device)`` whose docstring states the law; it raises AssertionError
when the implementation breaks it. Most laws are ``@given`` the rest of their inputs; ``run_law`` runs
them under a profile (and seed), counts the examples, and collects what the assertion helpers recorded
(max / p99 ULP error, the worst input, measurements) through a context variable.

Status of a run: "passed", "failed" (the law does not hold, or the component cannot be constructed,
loaded or called per the contract), "skipped" (component not provided, stub raising NotImplementedError,
dtype or device not applicable) or "error" (a bug of the suite itself).
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
import math
import random
import time
import traceback
import unittest
from collections.abc import Callable, Iterable
from typing import Any

import torch
from hypothesis.errors import Flaky

from properties import profiles
from properties.impl import Implementation, NotProvided

__all__ = [
    "ALL_DTYPES",
    "DEVICES",
    "DTYPE_NAMES",
    "FLOAT_DTYPES",
    "LAWS",
    "Law",
    "LawContext",
    "LawResult",
    "NotApplicable",
    "StubNotImplemented",
    "current",
    "describe",
    "dtype_from_name",
    "dtype_name",
    "law",
    "measure",
    "record_error",
    "run_law",
]

FLOAT_DTYPES = ALL_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
DTYPE_NAMES = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
_NAME_TO_DTYPE = {v: k for k, v in DTYPE_NAMES.items()} | {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "double": torch.float64,
    "float": torch.float32,
    "half": torch.float16,
}
DEVICES = ("cpu", "cuda")


def dtype_name(dtype: torch.dtype | str) -> str:
    """Short name of a float dtype: fp64, fp32, fp16, bf16."""
    return DTYPE_NAMES[dtype_from_name(dtype)] if isinstance(dtype, str) else DTYPE_NAMES[dtype]


def dtype_from_name(name: str | torch.dtype) -> torch.dtype:
    """torch dtype from a short or long name (``bf16``, ``bfloat16``, ``torch.bfloat16``)."""
    if isinstance(name, torch.dtype):
        return name
    key = name.lower().removeprefix("torch.")
    if key not in _NAME_TO_DTYPE:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(DTYPE_NAMES.values())}")
    return _NAME_TO_DTYPE[key]


class StubNotImplemented(unittest.SkipTest):
    """The implementation raised NotImplementedError (an exercise stub): skipped, never shrunk."""


class NotApplicable(unittest.SkipTest):
    """The law does not apply to this implementation / dtype / device (skipped with the reason)."""


# ---------------------------------------------------------------------------------------------- registration


@dataclasses.dataclass(frozen=True)
class Law:
    """A registered law: ``id`` = "<Component>.<function name>", the function, and where it applies."""

    id: str
    component: str
    name: str
    func: Callable[..., Any]
    dtypes: tuple[torch.dtype, ...]
    cost: int = 1
    tags: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return " ".join((self.func.__doc__ or "").split())

    @property
    def summary(self) -> str:
        """The law's first sentence."""
        return self.doc.split(". ")[0].rstrip(".") + "."

    @property
    def uses_hypothesis(self) -> bool:
        return hasattr(self.func, "hypothesis")

    def __call__(self, impl: Implementation, dtype: torch.dtype, device: str) -> Any:
        return self.func(impl, dtype, device)


class _LawTable(dict):
    """LAWS: law id → Law. The first read imports ``properties.laws`` (which registers them), so that
    ``from properties.registry import LAWS`` is all a caller needs."""

    _loaded = False

    def _load(self) -> None:
        if not _LawTable._loaded:
            _LawTable._loaded = True
            import properties.laws  # noqa: F401  (registration)

    def __getitem__(self, key: str) -> Law:
        self._load()
        try:
            return dict.__getitem__(self, key)
        except KeyError:
            raise KeyError(f"unknown law {key!r}; known: {', '.join(self)}") from None

    def __iter__(self):  # type: ignore[no-untyped-def]
        self._load()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._load()
        return dict.__len__(self)

    def __contains__(self, key: object) -> bool:
        self._load()
        return dict.__contains__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        self._load()
        return dict.get(self, key, default)

    def keys(self):  # type: ignore[no-untyped-def]
        self._load()
        return dict.keys(self)

    def values(self):  # type: ignore[no-untyped-def]
        self._load()
        return dict.values(self)

    def items(self):  # type: ignore[no-untyped-def]
        self._load()
        return dict.items(self)


LAWS: dict[str, Law] = _LawTable()


def law(
    component: str, *, dtypes: Iterable[torch.dtype] = ALL_DTYPES, cost: int = 1, tags: Iterable[str] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``func`` as the law "<component>.<func.__name__>"; ``cost`` divides the profile's example budget."""

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        law_id = f"{component}.{func.__name__}"
        previous = dict.get(LAWS, law_id)
        if previous is not None and previous.func.__module__ != func.__module__:
            raise ValueError(f"law {law_id} is registered twice")
        if hasattr(func, "hypothesis"):
            _instrument(func)
        dict.__setitem__(LAWS, law_id, Law(law_id, component, func.__name__, func, tuple(dtypes), cost, tuple(tags)))
        return func

    return register


def _instrument(test: Any) -> None:
    """Count examples and remember the first failing one (Hypothesis lets plugins replace inner_test)."""
    inner = test.hypothesis.inner_test

    @functools.wraps(inner)
    def counted(*args: Any, **kwargs: Any) -> Any:
        ctx = _CONTEXT.get()
        if ctx is None:
            return inner(*args, **kwargs)
        ctx.recorder.begin_example()
        try:
            return inner(*args, **kwargs)
        except AssertionError:
            ctx.recorder.fail_example()
            raise

    test.hypothesis.inner_test = counted


# ---------------------------------------------------------------------------------------------- the recorder


@dataclasses.dataclass
class Recorder:
    """What the assertion helpers saw over all examples of one run."""

    examples: int = 0
    first_failure: int | None = None
    max_ulp: float | None = None
    p99_ulp: float | None = None
    worst_input: dict[str, Any] | None = None
    failing_input: dict[str, Any] | None = None
    current_input: dict[str, Any] = dataclasses.field(default_factory=dict)
    measurements: dict[str, Any] = dataclasses.field(default_factory=dict)

    def begin_example(self) -> None:
        self.examples += 1
        self.current_input = {}

    def fail_example(self) -> None:
        if self.first_failure is None:
            self.first_failure = self.examples
        self.failing_input = dict(self.current_input)


@dataclasses.dataclass
class LawContext:
    """The run in progress: what is checked, where, and how to reproduce it."""

    law: Law
    impl: Implementation
    dtype: torch.dtype
    device: str
    profile: str
    seed: int | None
    recorder: Recorder = dataclasses.field(default_factory=Recorder)
    repro_style: str = "check"

    @property
    def dtype_name(self) -> str:
        return DTYPE_NAMES[self.dtype]

    def repro(self) -> str:
        """One command that reproduces this run (a ``check`` line, or a pytest line under pytest)."""
        if self.repro_style == "pytest":
            cmd = (
                f'NANOLM_IMPL={self.impl.spec} pytest tests/test_laws.py -k "{self.law.name} and '
                f'{self.dtype_name} and {self.device}" --profile {self.profile}'
            )
            return cmd + (f" --hypothesis-seed={self.seed}" if self.seed is not None else "")
        cmd = (
            f"nanolm-verify check {self.impl.spec} --only {self.law.id} --dtype {self.dtype_name} "
            f"--device {self.device} --profile {self.profile}"
        )
        return cmd + (f" --seed {self.seed}" if self.seed is not None else "")

    def regime(self, **extra: Any) -> str:
        """ "[RMSNorm, bf16, D=123, cpu, rows: eps-dominated]" from the context and the current input."""
        fields = {**self.recorder.current_input, **extra}
        parts = [self.law.component, self.dtype_name]
        parts += [f"{k}={v}" for k, v in fields.items() if k in ("D", "F", "shape", "config")]
        parts.append(self.device)
        parts += [f"{k}: {v}" for k, v in fields.items() if k not in ("D", "F", "shape", "config")]
        return "[" + ", ".join(parts) + "]"


_CONTEXT: contextvars.ContextVar[LawContext | None] = contextvars.ContextVar("nanolm_law", default=None)


def current() -> LawContext | None:
    """The law run in progress (None when a law function is called outside ``run_law``)."""
    return _CONTEXT.get()


def describe(**fields: Any) -> None:
    """Describe the current example's input (shape, D, regime …): used in messages and as worst_input."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        ctx.recorder.current_input.update({k: _jsonable(v) for k, v in fields.items()})


def record_error(max_ulp: float, p99_ulp: float | None = None, **where: Any) -> None:
    """Record one comparison's ULP error; the run keeps the maximum and the input that produced it."""
    ctx = _CONTEXT.get()
    if ctx is None or max_ulp is None or math.isnan(max_ulp):
        return
    rec = ctx.recorder
    if rec.max_ulp is None or max_ulp > rec.max_ulp:
        rec.max_ulp = float(max_ulp)
        rec.worst_input = {**rec.current_input, **{k: _jsonable(v) for k, v in where.items()}}
    if p99_ulp is not None and not math.isnan(p99_ulp):
        rec.p99_ulp = float(p99_ulp) if rec.p99_ulp is None else max(rec.p99_ulp, float(p99_ulp))


def count_examples(n: int) -> None:
    """Add ``n`` checked examples (laws that enumerate their inputs instead of drawing them)."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        ctx.recorder.examples += n


def measure(name: str, value: Any) -> None:
    """Record a named measurement (reported, not judged), e.g. gradient-norm ratios or batch variance."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        ctx.recorder.measurements[name] = _jsonable(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, torch.dtype):
        return DTYPE_NAMES.get(value, str(value))
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().double().tolist() if value.numel() <= 64 else f"tensor{tuple(value.shape)}"
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


# ---------------------------------------------------------------------------------------------- running


@dataclasses.dataclass
class LawResult:
    """One record of the report: a law × component × dtype × device run."""

    law_id: str
    component: str
    dtype: str
    device: str
    status: str
    message: str = ""
    max_ulp: float | None = None
    p99_ulp: float | None = None
    worst_input: dict[str, Any] | None = None
    examples: int = 0
    duration: float = 0.0
    found_after: int | None = None  # examples until the first failure (before shrinking)
    profile: str = "ci"
    seed: int | None = None
    measurements: dict[str, Any] = dataclasses.field(default_factory=dict)
    law: str = ""  # the law's statement (its docstring's first sentence)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_json(self) -> dict[str, Any]:
        """One JSON-able report record."""
        record = dataclasses.asdict(self)
        for key in ("max_ulp", "p99_ulp", "duration"):
            value = record[key]
            if isinstance(value, float) and not math.isfinite(value):
                record[key] = repr(value)
        record["duration"] = round(self.duration, 4)
        json.dumps(record)  # fail here, not in the report writer
        return record


def run_law(
    law: Law,
    impl: Implementation,
    *,
    dtype: torch.dtype | str,
    device: str = "cpu",
    profile: str = "ci",
    seed: int | None = None,
    repro: str = "check",
) -> LawResult:
    """Run one law against ``impl`` for one dtype and device under a profile (and seed) → LawResult.

    ``repro``: the style of the reproduction line in failure messages, "check" (a ``nanolm-verify check``
    command) or "pytest" (a ``pytest tests/test_laws.py -k …`` command).
    """
    dtype = dtype_from_name(dtype)
    prof = profiles.get(profile)
    if seed is None and not prof.derandomize and law.uses_hypothesis:
        seed = random.SystemRandom().getrandbits(32)  # an explicit seed makes every run reproducible
    result = LawResult(
        law.id, law.component, DTYPE_NAMES[dtype], device, "passed", profile=profile, seed=seed, law=law.summary
    )
    reason = _skip_reason(law, impl, dtype, device)
    if reason:
        result.status, result.message = "skipped", reason
        return result
    ctx = LawContext(law, impl, dtype, device, profile, seed, repro_style=repro)
    token = _CONTEXT.set(ctx)
    start = time.perf_counter()
    saved = None
    try:
        if law.uses_hypothesis:
            saved = (law.func._hypothesis_internal_use_settings, law.func._hypothesis_internal_use_seed)
            law.func._hypothesis_internal_use_settings = prof.settings(law.cost)
            law.func._hypothesis_internal_use_seed = seed
        law.func(impl, dtype, device)
    except unittest.SkipTest as exc:
        result.status, result.message = "skipped", str(exc)
    except AssertionError as exc:
        result.status, result.message = "failed", _failure_message(exc, ctx)
    except NotProvided:
        result.status, result.message = "skipped", f"{law.component} not provided"
    except Flaky as exc:  # the same input passed once and failed once: the implementation is not deterministic
        inner = [e for e in getattr(exc, "exceptions", ()) if isinstance(e, AssertionError)]
        detail = _failure_message(inner[0], ctx) if inner else f"{exc}\nreproduce: {ctx.repro()}"
        result.status, result.message = "failed", f"non-deterministic: the same input passed and failed\n{detail}"
    except Exception as exc:  # a bug of the suite: say so, with where it happened
        if isinstance(exc, NotImplementedError):
            result.status, result.message = "skipped", f"not implemented: {exc}"
        else:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4))
            result.status = "error"
            result.message = f"suite error {type(exc).__name__}: {exc}\n{tb}\nreproduce: {ctx.repro()}"
    finally:
        if saved is not None:
            law.func._hypothesis_internal_use_settings, law.func._hypothesis_internal_use_seed = saved
        _CONTEXT.reset(token)
    rec = ctx.recorder
    result.duration = time.perf_counter() - start
    result.examples = rec.examples if law.uses_hypothesis else max(rec.examples, 1)
    if result.status == "failed":  # a law without @given fails on its one (enumerated) check
        result.found_after = rec.first_failure if law.uses_hypothesis else max(rec.examples, 1)
    result.max_ulp, result.p99_ulp = rec.max_ulp, rec.p99_ulp
    result.worst_input = rec.failing_input if result.status == "failed" and rec.failing_input else rec.worst_input
    result.measurements = rec.measurements
    return result


def _skip_reason(law: Law, impl: Implementation, dtype: torch.dtype, device: str) -> str | None:
    if impl.skip_reason:
        return impl.skip_reason
    if law.component in ("RMSNorm", "SwiGLU", "Block") and law.component not in impl.provided:
        return f"{law.component} not provided"
    if dtype not in law.dtypes:
        return f"law does not apply to {DTYPE_NAMES[dtype]}"
    if device not in DEVICES:
        return f"unknown device {device!r}"
    if device == "cuda" and not torch.cuda.is_available():
        return "CUDA not available on this machine"
    return None


def _failure_message(exc: AssertionError, ctx: LawContext) -> str:
    text = str(exc) or type(exc).__name__
    notes = [n for n in getattr(exc, "__notes__", ()) if n.strip()]
    draws = [n if len(n) < 400 else n[:400] + " …" for n in notes if n.startswith(("Draw", "Falsifying"))]
    blob = [n for n in notes if "reproduce_failure" in n]
    if "reproduce:" not in text:
        text += f"\n  {ctx.regime()}\nreproduce: {ctx.repro()}"
    return "\n".join([text, *draws, *blob[:1]])
