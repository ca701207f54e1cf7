"""The runner: ``run_law`` runs one law × dtype × device against an implementation → ``LawResult``;
``run_check`` runs a selection of them. ``check``, ``compare``, baselines, the gallery and pytest use it.

Status of a result: "passed"; "failed" with a ``cause`` — ``law`` (the law's assertion), ``contract`` (the
component cannot be built, loaded, moved or called per the contract), ``crash`` (an exception inside the
implementation), ``timeout``; "skipped" (component not provided, stub raising NotImplementedError, dtype or
device not applicable); "error" (a bug of the suite itself).

Hypothesis is used through its public API only: each run wraps the law's inner test anew with ``given``,
``settings`` (the profile's) and ``seed``. A law's seed is derived from the run seed and the law's id, dtype
and device (never from the order laws run in), so ``--only LAW --seed S`` reproduces what a full run with
``--seed S`` did for that law.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import random
import time
import traceback
import unittest
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import hypothesis
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from golden.formats import NAMES, fmt
from properties.library.context import LawContext, SuiteDataError, open_context
from properties.library.laws import LAWS
from properties.library.subject import COMPONENTS, Implementation, NotProvided
from properties.library.table import Law, law
from properties.running import databases, devices, profiles
from properties.running.loading import load

__all__ = [
    "DEVICES",
    "LAWS",
    "Law",
    "LawResult",
    "Task",
    "UsageError",
    "law",
    "law_seed",
    "plan",
    "resolve_devices",
    "resolve_dtypes",
    "run_check",
    "run_law",
    "select_laws",
]

DEVICES = ("cpu", "cuda")  # the devices the pytest conformance tests are parametrized over


class UsageError(ValueError):
    """A bad selection (law, dtype, device): a usage error, exit status 2 on the command line."""


@dataclasses.dataclass
class LawResult:
    """One record of the report: a law × component × dtype × device run."""

    law_id: str
    component: str
    dtype: str
    device: str
    status: str
    message: str = ""
    cause: str | None = None  # for failed results: "law" | "contract" | "crash" | "timeout"
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
    declared: str = ""  # the component's declared conventions this run honoured (Conventions.summary())

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


# ---------------------------------------------------------------------------------------------- one law


def law_seed(run_seed: int, law_id: str, dtype: str, device: str) -> int:
    """The seed of one law run, derived from the run seed and the law's identity (not from run order)."""
    digest = hashlib.sha256(f"{run_seed}:{law_id}:{dtype}:{device}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def repro_line(
    law: Law, impl: Implementation, dtype: str, device: str, profile: str, seed: int | None, style: str = "check"
) -> str:
    """One command that reproduces this run (a ``check`` line, or a pytest line under pytest)."""
    if style == "pytest":
        cmd = (
            f'pytest --pyargs properties.conformance.test_laws -k "{law.name} and {dtype} and {device}" '
            f"--impl {impl.spec} --nanolm-profile {profile}"
        )
        return cmd + (f" --hypothesis-seed={seed}" if seed is not None else "")
    cmd = f"nanolm-verify check {impl.spec} --only {law.id} --dtype {dtype} --device {device} --profile {profile}"
    return cmd + (f" --seed {seed}" if seed is not None else "")


class ShrinkBudgetExceeded(BaseException):
    """Raised into Hypothesis (which lets BaseExceptions through) when shrinking has used up its time budget."""


def _hypothesis_test(
    law: Law, ctx: LawContext, prof: profiles.Profile, seed: int | None, database: Any = None
) -> Callable[..., Any]:
    """The law's inner test wrapped anew (public API): counts examples, remembers every failure, and stops the
    shrinking ``prof.shrink_budget`` seconds after the first failure (the smallest failure so far is reported)."""
    body, rec = law.body, ctx.recorder
    stop_at = [float("inf")]

    def counted(impl: Any, dtype: Any, device: Any, data: Any) -> Any:
        if rec.first_failure is not None and time.monotonic() > stop_at[0]:
            raise ShrinkBudgetExceeded
        rec.begin_example()
        try:
            return body(impl, dtype, device, data)
        except AssertionError as exc:
            if rec.first_failure is None:
                stop_at[0] = time.monotonic() + prof.shrink_budget
            rec.fail_example(exc)
            raise

    functools.update_wrapper(counted, body)  # name, docstring and the @example pins travel with it
    test = given(data=st.data())(counted)
    if seed is not None:
        test = hypothesis.seed(seed)(test)  # (seed turns the database off: the settings applied next turn it back on)
    return prof.settings(law.cost, database=database)(test)


def run_law(
    law: Law,
    impl: Implementation,
    *,
    dtype: torch.dtype | str,
    device: str = "cpu",
    profile: str = "ci",
    seed: int | None = None,
    repro: str | Callable[[int | None], str] = "check",
    database: str | None = None,
) -> LawResult:
    """Run one law against ``impl`` for one dtype and device under a profile (and run seed) → LawResult.

    ``repro``: the reproduction line of failure messages: "check" (a ``nanolm-verify check`` command), "pytest"
    (a ``pytest --pyargs properties.conformance…`` command), or a function of the run's seed that builds it (the
    pytest plugin: a command for the very test that ran). ``database``: a directory or a
    ``redis://host:port`` URL of a shared Hypothesis example database (``databases.open``), replayed first.
    """
    f = fmt(dtype)
    prof = profiles.get(profile)
    if seed is None and law.uses_hypothesis and (database is not None or not prof.derandomize):
        # an explicit seed makes every run reproducible (with a database: seed 0 keeps a ci run deterministic)
        seed = 0 if prof.derandomize else random.SystemRandom().getrandbits(32)
    result = LawResult(law.id, law.component, f.name, device, "passed", profile=profile, seed=seed, law=law.summary)
    reason = _skip_reason(law, impl, f.dtype, device)
    if reason:
        result.status, result.message = "skipped", reason
        return result
    ctx = LawContext(
        law.id,
        law.component,
        f.dtype,
        device,
        profile,
        prof.slow,
        seed,
        repro(seed) if callable(repro) else repro_line(law, impl, f.name, device, profile, seed, repro),
        conventions=impl.conventions.get(law.component),
    )
    start = time.perf_counter()
    with open_context(ctx):
        try:
            if law.uses_hypothesis:
                own_seed = None if seed is None else law_seed(seed, law.id, f.name, device)
                db = databases.open(database) if database is not None else None
                _hypothesis_test(law, ctx, prof, own_seed, db)(impl, f.dtype, device)
            else:
                law.func(impl, f.dtype, device)
        except unittest.SkipTest as exc:
            result.status, result.message = "skipped", str(exc)
        except NotProvided:
            result.status, result.message = "skipped", f"{law.component} not provided"
        except AssertionError as exc:
            result.status, result.cause = "failed", getattr(exc, "cause", "law")
            result.message = _failure_message(exc, ctx)
        except Flaky as exc:  # the same input passed once and failed once: the implementation is not deterministic
            inner = [e for e in getattr(exc, "exceptions", ()) if isinstance(e, AssertionError)]
            detail = _failure_message(inner[0], ctx) if inner else f"{exc}\nreproduce: {ctx.repro}"
            result.status, result.cause = "failed", getattr(inner[0], "cause", "law") if inner else "law"
            result.message = f"non-deterministic: the same input passed and failed\n{detail}"
        except NotImplementedError as exc:
            result.status, result.message = "skipped", f"not implemented: {exc}"
        except SuiteDataError as exc:
            result.status, result.message = "error", str(exc)
        except ShrinkBudgetExceeded:  # report the smallest failure found within the budget
            failure = ctx.recorder.last_failure
            result.status, result.cause = "failed", getattr(failure, "cause", "law")
            result.message = _failure_message(failure, ctx) + (
                f"\n(not fully shrunk: shrinking stopped after the {prof.shrink_budget:g} s budget of profile "
                f"{prof.name}; this is the smallest failing example found by then)"
            )
            result.measurements["shrunk"] = "partially (time budget)"
        except KeyboardInterrupt:
            raise  # the user's (in a worker process, where SIGINT is ignored, the worker reports it as a crash)
        except BaseException as exc:
            if not isinstance(exc, Exception) or _raised_in(exc, impl):  # SystemExit, pytest's Skipped …: the subject
                tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4))
                result.status, result.cause = "failed", "crash"
                result.message = f"{law.component} raised {type(exc).__name__}: {exc}\n{tb}\nreproduce: {ctx.repro}"
            else:  # a bug of the suite: say so, with where it happened
                tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4))
                result.status = "error"
                result.message = f"suite error {type(exc).__name__}: {exc}\n{tb}\nreproduce: {ctx.repro}"
    rec = ctx.recorder
    result.duration = time.perf_counter() - start
    result.examples = rec.examples if law.uses_hypothesis else max(rec.examples, 1)
    if result.status == "failed":  # a law without @given fails on its one (enumerated) check
        result.found_after = rec.first_failure if law.uses_hypothesis else max(rec.examples, 1)
    result.max_ulp, result.p99_ulp = rec.max_ulp, rec.p99_ulp
    result.worst_input = rec.failing_input if result.status == "failed" and rec.failing_input else rec.worst_input
    result.measurements = rec.measurements
    _honour_declaration(result, ctx)
    return result


def _honour_declaration(result: LawResult, ctx: LawContext) -> None:
    """Record the declaration the run honoured; a law failure no bound can model under it (Conventions.excuse)
    becomes an expected, measured result: "xfailed", the declaration as the reason, the measurement kept."""
    if ctx.conventions is None:
        return
    result.declared = ctx.conventions.summary()
    excuse = ctx.conventions.excuse(result.law_id, ctx.dtype)
    if excuse and result.status == "failed" and result.cause == "law":
        result.status, result.message = "xfailed", f"{excuse}\n{result.message}"
        result.measurements["declared"] = excuse


def _raised_in(exc: BaseException, impl: Implementation) -> bool:
    """Did a frame of the implementation's own source take part in raising ``exc``?"""
    source = getattr(impl.module, "__file__", None)
    if not source:
        return False
    path = Path(source).resolve()
    root = path.parent if path.name == "__init__.py" else path
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        file = Path(frame.f_code.co_filename).resolve()
        if file == root or root in file.parents:
            return True
    return False


def _skip_reason(law: Law, impl: Implementation, dtype: torch.dtype, device: str) -> str | None:
    if impl.skip_reason:
        return impl.skip_reason
    if law.component in COMPONENTS and law.component not in impl.provided:
        return f"{law.component} not provided"
    if dtype not in law.dtypes:
        return f"law does not apply to {fmt(dtype).name}"
    declared = impl.conventions.get(law.component)
    if declared is not None and not declared.supports(dtype):  # CONVENTIONS[component]["dtypes"]
        return f"dtype not supported: {law.component} declares dtypes {', '.join(declared.dtypes or ())}"
    if "accelerator" in law.tags and device == "cpu":
        return "compares an accelerator with the CPU: not applicable on the CPU itself"
    return devices.dtype_problem(device, dtype)


def _failure_message(exc: AssertionError, ctx: LawContext) -> str:
    text = str(exc) or type(exc).__name__
    notes = [n for n in getattr(exc, "__notes__", ()) if n.strip()]
    draws = [n if len(n) < 400 else n[:400] + " …" for n in notes if n.startswith(("Draw", "Falsifying"))]
    if "reproduce:" not in text:
        text += f"\n  {ctx.regime()}\nreproduce: {ctx.repro}"
    return "\n".join([text, *draws])


# ---------------------------------------------------------------------------------------------- a selection


def select_laws(only: Iterable[str] | None = None) -> list[Law]:
    """Laws in component order; ``only``: components, law ids or law names (comma-separated allowed)."""
    order = {c: i for i, c in enumerate((*COMPONENTS, "Module"))}
    laws = sorted(LAWS.values(), key=lambda law: order.get(law.component, len(order)))
    selectors = [s.strip() for item in (only or ()) for s in item.split(",") if s.strip()]
    if not selectors:
        return laws
    chosen: list[Law] = []
    for sel in selectors:
        match = [law for law in laws if sel.lower() in (law.component.lower(), law.id.lower(), law.name.lower())]
        if not match:
            raise UsageError(
                f"--only {sel!r} matches no component or law; components: {', '.join(COMPONENTS)}; "
                f"laws: e.g. {laws[0].id} (see `nanolm-verify check --list`)"
            )
        chosen += [law for law in match if law not in chosen]
    return [law for law in laws if law in chosen]


def resolve_devices(device: str | Sequence[str] | None) -> list[str]:
    """Device strings (``properties.running.devices.resolve``); UsageError for one torch does not know."""
    try:
        return devices.resolve(device)
    except ValueError as exc:
        raise UsageError(f"--device {exc}") from None


def resolve_dtypes(dtypes: Iterable[str | torch.dtype] | None) -> list[torch.dtype]:
    """Every dtype in report order when none is named; else the named ones (UsageError for an unknown name)."""
    if not dtypes:
        return [fmt(n).dtype for n in NAMES]
    names = [s for item in dtypes for s in (item.split(",") if isinstance(item, str) else [item])]
    try:
        return [fmt(n).dtype for n in names if n != ""]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


@dataclasses.dataclass(frozen=True)
class Task:
    """One law × dtype × device run of a selection (what a worker process is asked to do)."""

    law_id: str
    component: str
    dtype: str
    device: str
    profile: str
    seed: int | None
    law: str = ""  # the law's statement
    database: str | None = None

    def run(self, impl: Implementation) -> LawResult:
        return run_law(LAWS[self.law_id], impl, dtype=self.dtype, device=self.device, profile=self.profile,
                       seed=self.seed, database=self.database)  # fmt: skip


def plan(
    *,
    profile: str = "ci",
    devices: Sequence[str] | str | None = ("cpu",),
    only: Iterable[str] | None = None,
    dtypes: Iterable[str | torch.dtype] | None = None,
    seed: int | None = None,
    database: str | None = None,
) -> list[Task]:
    """Every selected law × device × dtype where the law is defined (law order, then device, then dtype)."""
    profiles.get(profile)
    devs, dts = resolve_devices(devices), resolve_dtypes(dtypes)
    return [
        Task(entry.id, entry.component, fmt(dtype).name, device, profile, seed, entry.summary, database)
        for entry in select_laws(only)
        for device in devs
        for dtype in dts
        if dtype in entry.dtypes  # not applicable: no record (the law's dtypes are part of its definition)
        and not ("accelerator" in entry.tags and device == "cpu")
    ]


def run_check(
    impl: Implementation | str,
    *,
    profile: str = "ci",
    devices: Sequence[str] | str | None = ("cpu",),
    only: Iterable[str] | None = None,
    dtypes: Iterable[str | torch.dtype] | None = None,
    seed: int | None = None,
    progress: Any = None,
) -> list[LawResult]:
    """Run every selected law × dtype × device against ``impl`` in this process → one LawResult each.

    (``check`` runs the same plan in worker processes: ``properties.running.workers``.)
    """
    impl = load(impl) if isinstance(impl, str) else impl
    results = []
    for task in plan(profile=profile, devices=devices, only=only, dtypes=dtypes, seed=seed):
        results.append(task.run(impl))
        if progress:
            progress(results[-1])
    return results
