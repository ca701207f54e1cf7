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

import contextlib
import copy
import dataclasses
import functools
import hashlib
import io
import json
import math
import random
import sys
import time
import traceback
import unittest
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import hypothesis
import torch
from hypothesis import Phase, given
from hypothesis import strategies as st
from hypothesis.errors import Flaky, FlakyStrategyDefinition

from golden.formats import NAMES, fmt
from properties import __version__
from properties.library import components, diagnosis
from properties.library.assertions import FAILED_TIER, TIER, layout
from properties.library.context import LawContext, SuiteDataError, open_context
from properties.library.laws import LAWS
from properties.library.subject import Implementation, NotProvided
from properties.library.table import Law, law
from properties.running import databases, devices, profiles
from properties.running.loading import UsageError, load

__all__ = [
    "COUNTEREXAMPLE_FORMAT",
    "DEVICES",
    "LAWS",
    "Law",
    "LawResult",
    "Task",
    "UsageError",
    "law",
    "law_seed",
    "load_counterexample",
    "plan",
    "resolve_devices",
    "resolve_dtypes",
    "run_check",
    "run_law",
    "select_laws",
]

DEVICES = ("cpu", "cuda")  # the devices the pytest conformance tests are parametrized over


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
    headroom: float | None = None  # max error ÷ bound over the law's examples (≤ 1 passes; the number to watch)
    bound: dict[str, Any] | None = None  # the bound where the max headroom was reached: abs, ulps, formula
    headroom_median: float | None = None  # the median over examples of each example's headroom (1/slack)
    counterexample: str | None = None  # failed: the .pt file that ``nanolm-verify replay`` re-runs
    replay_data: bytes | None = dataclasses.field(default=None, repr=False)  # that file's content (not in JSON)
    declared: str = ""  # the component's declared conventions this run honoured (Conventions.summary())
    diagnosis: str | None = None  # failed: the convention or bug the counterexample looks like (library.diagnosis)
    tier: str | None = None  # the tier that judged it: probabilistic | deterministic | empirical (None: no bound)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_json(self) -> dict[str, Any]:
        """One JSON-able report record."""
        record = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "replay_data"}
        for key in ("max_ulp", "p99_ulp", "duration", "headroom", "headroom_median"):
            value = record[key]
            if isinstance(value, float) and not math.isfinite(value):
                record[key] = repr(value)
        record["duration"] = round(self.duration, 4)
        return json.loads(json.dumps(record))  # a deep copy of plain data; fails here, not in the report writer


# ---------------------------------------------------------------------------------------------- one law


@contextlib.contextmanager
def _seeded_torch_rng(device: str) -> Iterator[None]:
    """torch's global generators seeded to a fixed value for one example and restored after it (as Hypothesis does
    for ``random`` and ``numpy.random``): the CPU generator, and the law's CUDA device's. A subject drawing random
    numbers sees the same ones whatever ran before it — no verdict depends on law order — and nothing outside the
    example sees the seed: torch's generator is never registered with Hypothesis, so a user's own ``@given`` tests
    in the same session draw what they would have drawn without the laws."""
    dev = torch.device(device)
    cuda = [torch.cuda.current_device() if dev.index is None else dev.index] if dev.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.default_generator.manual_seed(0)  # (torch.manual_seed would also queue a seed for every CUDA device)
        for index in cuda:
            torch.cuda.default_generators[index].manual_seed(0)
        yield


@contextlib.contextmanager
def _draws_independent_of_loaded_source() -> Iterator[None]:
    """Hypothesis (6.13x and later) sometimes answers a draw with a constant found in the source of a "local" module:
    any loaded module outside site-packages whose path has no test folder — the subject, the suite itself in an
    editable checkout. A law's draws would then depend on the subject under test, on which modules happen to be
    loaded, and on where the checkout lies: a derandomized run would not be the same run for every implementation,
    every machine and every install, and a module loaded between a failure and its replay makes Hypothesis report
    flakiness. Around a law run the pool of local constants is empty; Hypothesis' own constants (0, ±inf, NaN,
    powers of two …) stay. (No public setting exists for this; without the internal hook nothing is changed.)"""
    try:
        from hypothesis.internal.conjecture import providers

        original, empty = providers._get_local_constants, providers.Constants()
    except (ImportError, AttributeError):  # a Hypothesis without source constants
        yield
        return
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()  # choices cached from the local pool
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()


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


class _RunnerOutcome(BaseException):
    """Carries an outcome of the test runner (``_from_the_test_runner``) through Hypothesis, which lets
    BaseExceptions through but treats pytest's ``Failed`` as a failing example and would shrink it."""

    def __init__(self, outcome: BaseException) -> None:
        super().__init__(outcome)
        self.outcome = outcome


class ShrinkBudgetExceeded(BaseException):
    """Raised into Hypothesis (which lets BaseExceptions through) when shrinking has used up its time budget."""


class SearchBudgetExhausted(BaseException):
    """Raised into Hypothesis when a law that still holds has searched for its profile's time budget."""


class _Recording:
    """Stands in for the law's ``data``: draws from it and records every (label, value) into the Recorder."""

    def __init__(self, data: Any, rec: Any) -> None:
        self._data, self._rec = data, rec

    def draw(self, strategy: Any, label: str | None = None) -> Any:
        value = self._data.draw(strategy, label=label)
        try:
            kept = copy.deepcopy(value)  # the law may modify what it drew; the file keeps what was drawn
        except Exception:
            kept = value
        self._rec.draws.append((label, kept))
        return value

    def __repr__(self) -> str:
        return repr(self._data)


class ReplayMismatch(SuiteDataError):
    """A counterexample file's draws do not fit the law as it is now (the suite changed since it was written)."""


class _Replay:
    """Stands in for ``data`` in a replay: answers the law's draws with the recorded values, in order."""

    def __init__(self, draws: Sequence[tuple[str | None, Any]]) -> None:
        self._draws, self._next = list(draws), 0

    def draw(self, strategy: Any, label: str | None = None) -> Any:
        if self._next >= len(self._draws):
            raise ReplayMismatch(f"the law draws more than the {len(self._draws)} value(s) recorded in the file")
        recorded, value = self._draws[self._next]
        if recorded != label:
            raise ReplayMismatch(f"draw {self._next + 1} is labelled {label!r} now, {recorded!r} in the file")
        self._next += 1
        return copy.deepcopy(value)

    def __repr__(self) -> str:
        return "<the recorded counterexample>"


def _hypothesis_test(
    law: Law,
    ctx: LawContext,
    prof: profiles.Profile,
    seed: int | None,
    database: Any = None,
    replay: Sequence[tuple[str | None, Any]] | None = None,
) -> Callable[..., Any]:
    """The law's inner test wrapped anew (public API): counts examples, records each example's draws, remembers
    every failure, stops the search after ``prof.search_budget`` seconds without a failure, and the shrinking
    ``prof.shrink_budget`` seconds after the first failure (the smallest failure so far is reported). ``replay``:
    run exactly once, on these recorded draws."""
    body, rec = law.body, ctx.recorder
    stop_at = [float("inf")]
    search_until = time.monotonic() + (prof.search_budget or float("inf"))

    def counted(impl: Any, dtype: Any, device: Any, data: Any) -> Any:
        if rec.first_failure is not None and time.monotonic() > stop_at[0]:
            raise ShrinkBudgetExceeded
        rec.begin_example()
        try:
            with _seeded_torch_rng(device):
                out = body(impl, dtype, device, _Recording(data, rec))
        except AssertionError as exc:
            if rec.first_failure is None:
                stop_at[0] = time.monotonic() + prof.shrink_budget
            rec.fail_example(exc)
            raise
        except BaseException as exc:
            if _from_the_test_runner(exc, impl):
                raise _RunnerOutcome(exc) from None  # past Hypothesis, which would shrink a pytest ``Failed``
            raise
        if rec.first_failure is None and time.monotonic() > search_until:  # after the example: it drew all it draws
            raise SearchBudgetExhausted
        return out

    functools.update_wrapper(counted, body)  # name, docstring and the @example pins travel with it
    if replay is not None:  # one example, the recorded one (no pins, no database, no shrinking)
        test = given(data=st.builds(_Replay, st.just(replay)))(counted)
        return prof.settings(law.cost, max_examples=1, derandomize=True, phases=(Phase.generate,))(test)
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
    replay: Sequence[tuple[str | None, Any]] | None = None,
) -> LawResult:
    """Run one law against ``impl`` for one dtype and device under a profile (and run seed) → LawResult.

    ``repro``: the reproduction line of failure messages: "check" (a ``nanolm-verify check`` command), "pytest"
    (a ``pytest --pyargs properties.conformance…`` command), or a function of the run's seed that builds it (the
    pytest plugin: a command for the very test that ran). ``database``: a directory or a
    ``redis://host:port`` URL of a shared Hypothesis example database (``databases.open``), replayed first.
    ``replay``: the recorded draws of one example (a counterexample file's): run the law once, on exactly them.

    A failed result carries ``replay_data``: the bytes of a counterexample file (``counterexample_payload``).
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
        case_budget=prof.case_budget,
    )
    start, searched = time.perf_counter(), ""
    failure: BaseException | None = None  # what failed the law (its message is laid out below, with the count)
    notes: list[str] = []  # what the runner adds to it
    with open_context(ctx):
        try:
            if law.uses_hypothesis:
                own_seed = None if seed is None else law_seed(seed, law.id, f.name, device)
                db = databases.open(database) if database is not None else None
                with _draws_independent_of_loaded_source():
                    _hypothesis_test(law, ctx, prof, own_seed, db, replay)(impl, f.dtype, device)
            else:
                with _seeded_torch_rng(device):  # the same fixed start as a Hypothesis example
                    law.func(impl, f.dtype, device)
        except _RunnerOutcome as exc:
            raise exc.outcome from None
        except unittest.SkipTest as exc:
            result.status, result.message = "skipped", str(exc)
        except NotProvided:
            result.status, result.message = "skipped", f"{law.component} not provided"
        except AssertionError as exc:
            result.status, result.cause, failure = "failed", getattr(exc, "cause", "law"), exc
        except Flaky as exc:  # one example, run twice, gave two verdicts (or drew differently): say which and why
            inner = [e for e in getattr(exc, "exceptions", ()) if isinstance(e, AssertionError)]
            result.status, result.cause = "failed", getattr(inner[0], "cause", "law") if inner else "law"
            result.message = _flaky_message(exc, inner[0] if inner else ctx.recorder.last_failure, ctx)
        except NotImplementedError as exc:
            result.status, result.message = "skipped", f"not implemented: {exc}"
        except SuiteDataError as exc:
            result.status, result.message = "error", str(exc)
        except ShrinkBudgetExceeded:  # report the smallest failure found within the budget
            failure = ctx.recorder.last_failure
            result.status, result.cause = "failed", getattr(failure, "cause", "law")
            notes.append(
                f"not fully shrunk: shrinking stopped after the {prof.shrink_budget:g} s budget of profile "
                f"{prof.name}; this is the smallest failing example found by then"
            )
            result.measurements["shrunk"] = "partially (time budget)"
        except SearchBudgetExhausted:  # passed: every example so far holds
            searched = f"stopped after {ctx.recorder.examples} examples by the {prof.search_budget:g} s search budget"
        except BaseException as exc:
            if _from_the_test_runner(exc, impl):
                raise  # Ctrl-C, pytest-timeout, pytest.exit …: the runner's, never the implementation's
            tb = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)
            trace = [line for chunk in tb[:-1] for line in chunk.splitlines() if line.strip()]  # detail lines
            said, *more = str(exc).splitlines() or [""]
            if not isinstance(exc, Exception) or _raised_in(exc, impl):  # SystemExit, pytest's Skipped …: the subject
                result.status, result.cause = "failed", "crash"
                head = f"{law.component} raised {type(exc).__name__}: {said}"
            else:  # a bug of the suite: say so, with where it happened
                result.status, head = "error", f"suite error {type(exc).__name__}: {said}"
            result.message = layout(head, [*more, *trace], ctx.repro, width=None)
    rec = ctx.recorder
    result.duration = time.perf_counter() - start
    result.examples = rec.examples if law.uses_hypothesis else max(rec.examples, 1)
    if result.status == "failed":  # a law without @given fails on its one (enumerated) check
        result.found_after = rec.first_failure if law.uses_hypothesis else max(rec.examples, 1)
    if failure is not None:
        result.message = _failure_message(failure, ctx, notes)
    result.max_ulp, result.p99_ulp = rec.max_ulp, rec.p99_ulp
    result.headroom, result.bound, result.headroom_median = rec.headroom, rec.bound, rec.headroom_median
    shown = getattr(failure, "headroom", None)
    if shown is not None and rec.headroom is not None and not math.isclose(shown, rec.headroom, rel_tol=5e-3):
        result.message = _before_reproduce(result.message, [
            f"  headroom {rec.headroom:.3g} in the table: the largest over the examples met; this message shows "
            f"the shrunk example ({shown:.3g}) — Hypothesis keeps the simplest failing example, not the worst"
        ])  # fmt: skip
    result.worst_input = rec.failing_input if result.status == "failed" and rec.failing_input else rec.worst_input
    result.measurements = {**rec.measurements, **result.measurements}
    failed_tier = result.measurements.pop(FAILED_TIER, None)  # the tier a failure exceeded, else the sharpest used
    used_tier = result.measurements.pop(TIER, None)
    result.tier = failed_tier if failed_tier is not None and result.cause == "law" else used_tier
    if searched:
        result.measurements["search"] = f"{searched} of profile {prof.name}"
    _honour_declaration(result, ctx)
    if result.status == "failed" and result.cause == "law":
        _diagnose(result, ctx)
    if result.status == "failed":
        result.replay_data = _counterexample(result, law, impl, rec)
    return result


def _diagnose(result: LawResult, ctx: LawContext) -> None:
    """Name what the failure looks like (``library.diagnosis``) and show a regime's input row, in the message
    (detail lines before its reproduce line) and in ``result.diagnosis``. Runs on failures only; a diagnosis that
    cannot be made says nothing, and a bug of the diagnosis never changes the verdict."""
    rec = ctx.recorder
    calls, mismatch = _failing(rec)
    try:
        found = diagnosis.diagnose(calls, ctx.conventions, law_id=result.law_id, mismatch=mismatch, tier=result.tier)
        row = diagnosis.input_row(calls, mismatch)
    except Exception as exc:  # the suite's own problem: reported beside the verdict, never instead of it
        found, row = None, None
        result.measurements["diagnosis error"] = f"{type(exc).__name__}: {exc}"
    lines = [f"  {row}"] if row else []
    if found is not None:
        result.diagnosis = found.text
        lines.append(f"  diagnosis: {found.text}")
    if lines:
        result.message = _before_reproduce(result.message, lines)


def _failing(rec: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The failing example's recorded calls and failed comparison (a law without Hypothesis has one example: its
    calls and comparison are the run's latest)."""
    if rec.failing_calls is not None:
        return rec.failing_calls, rec.failing_mismatch
    return rec.calls, rec.mismatch


def _before_reproduce(message: str, lines: list[str]) -> str:
    """``lines`` inserted before the message's reproduce line (appended when it has none)."""
    parts = message.split("\n")
    at = next((i for i, line in enumerate(parts) if line.lstrip().startswith("reproduce:")), len(parts))
    return "\n".join([*parts[:at], *lines, *parts[at:]])


def _flaky_message(exc: BaseException, failure: BaseException | None, ctx: LawContext) -> str:
    """The suite's own account of one example that gave two verdicts: both outcomes, what the subject returned
    each time, and the draws (in place of Hypothesis' "Inconsistent data generation … external state?")."""
    rec = ctx.recorder
    first = getattr(failure, "headline", None) or (str(failure).split("\n", 1)[0] if failure is not None else "failed")
    first = first or type(failure).__name__
    drew_differently = isinstance(exc, FlakyStrategyDefinition)
    second = "drew other values from the same choices" if drew_differently else "passed"
    lines = [
        "one example, run twice by Hypothesis, gave two verdicts",
        f"  first run: failed: {first}",
        f"  second run: {second}",
    ]
    lines.append("  " + _outputs_compared(rec.failing_calls or [], rec.calls))
    shown = [f"{label}={_short(value)}" for label, value in rec.failing_draws or []]
    if shown:
        lines.append("  draws: " + "; ".join(shown))
    lines.append(f"  {ctx.regime()}")
    return "\n".join(lines) + f"\nreproduce: {ctx.repro}"


def _outputs_compared(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> str:
    """Whether the subject returned the same bits on the two runs of the example (its recorded calls)."""
    pairs = [(a, b) for a, b in zip(first, second, strict=False) if "y" in a and "y" in b]
    if not pairs:
        return "cause: the subject's outputs were not recorded on both runs"
    for n, (a, b) in enumerate(pairs, 1):
        same_in = a["x"].shape == b["x"].shape and torch.equal(a["x"], b["x"])
        if same_in and not (a["y"].shape == b["y"].shape and torch.equal(a["y"].nan_to_num(), b["y"].nan_to_num())):
            return (f"cause: the implementation is not deterministic: call {n} got the same input twice and returned "
                    "different values")  # fmt: skip
        if not same_in:
            return f"cause: call {n} got other inputs on the second run: the law's case depends on state"
    return (
        "cause: the implementation returned the same bits both times: the verdict depends on state outside the "
        "example (the law's bound or case, or global state such as torch's RNG or an earlier call's cache)"
    )


def _short(value: Any) -> str:
    """A drawn value in one short line: a case by its description (``describe()``), anything else by its repr."""
    described = getattr(value, "describe", None)
    text = repr(described()) if callable(described) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= 160 else text[:160] + " …"


COUNTEREXAMPLE_FORMAT = "nanolm-verify/counterexample/1"


def _counterexample(result: LawResult, law: Law, impl: Implementation, rec: Any) -> bytes | None:
    """The bytes of a counterexample file (``torch.save``): what replays the failure, and the tensors.

    ``draws``: the failing example's ``data.draw`` values in order (None for a law without Hypothesis: it
    enumerates its inputs, a replay re-runs it); ``calls``: the input and weights of each call of the subject.
    """
    spec = impl.spec
    if Path(spec).suffix == ".py":  # a module name stays a name, even where a folder of that name is in cwd
        spec = str(Path(spec).resolve())  # a path keeps working from another directory
    payload = {
        "format": COUNTEREXAMPLE_FORMAT,
        "law_id": result.law_id,
        "dtype": result.dtype,
        "device": result.device,
        "implementation": spec,
        "profile": result.profile,
        "seed": result.seed,
        "status": result.status,
        "cause": result.cause,
        "message": result.message,
        "draws": (rec.failing_draws or []) if law.uses_hypothesis else None,
        "calls": _failing(rec)[0],
        "versions": {"nanolm-verify": __version__, "torch": torch.__version__, "hypothesis": hypothesis.__version__},
    }
    for attempt in ("all", "without draws", "without tensors"):
        buffer = io.BytesIO()
        try:
            torch.save(payload, buffer)
            return buffer.getvalue()
        except Exception as exc:  # an unpicklable drawn value: keep what can be kept, and say so
            key = "draws" if attempt == "all" else "calls"
            payload[key] = None
            payload.setdefault("note", f"not saved: {attempt} failed ({type(exc).__name__}: {exc})")
    return None


def load_counterexample(path: str | Path) -> dict[str, Any]:
    """A counterexample file's payload (ValueError naming the file when it is not one). It is a pickle: load only
    files you trust, as with any ``torch.load(weights_only=False)``."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=False)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except Exception as exc:
        raise ValueError(f"{path} is not a counterexample file ({type(exc).__name__}: {exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != COUNTEREXAMPLE_FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(f"{path}: format {found!r}, expected {COUNTEREXAMPLE_FORMAT!r}")
    return payload


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


def _in_subject(impl: Implementation) -> Callable[[Any], bool]:
    """Is a frame's code part of the implementation's own source (its file, or its package's folder)?"""
    source = getattr(impl.module, "__file__", None)
    if not source:
        return lambda frame: False
    path = Path(source).resolve()
    root = path.parent if path.name == "__init__.py" else path

    def inside(frame: Any) -> bool:
        file = Path(frame.f_code.co_filename).resolve()
        return file == root or root in file.parents

    return inside


def _raised_in(exc: BaseException, impl: Implementation) -> bool:
    """Did a frame of the implementation's own source take part in raising ``exc``?"""
    inside = _in_subject(impl)
    return any(inside(frame) for frame, _ in traceback.walk_tb(exc.__traceback__))


def _from_the_test_runner(exc: BaseException, impl: Implementation) -> bool:
    """Is ``exc`` an outcome of the test runner around the law, never a result about the implementation?

    KeyboardInterrupt (the user's: in a worker process SIGINT is ignored, and a worker reports what escapes as a
    crash), and pytest's outcomes (``Failed``, ``Skipped``, ``XFailed``, ``Exit``: ``OutcomeException``) raised by
    pytest or a plugin — pytest-timeout's signal handler raises ``Failed`` in whatever frame was running, the
    subject's included. The innermost frame outside pytest's own package tells who called ``pytest.fail``/
    ``skip``/``exit``: a subject doing it itself is still reported against the subject."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    outcomes = sys.modules.get("_pytest.outcomes")  # pytest not imported: no pytest outcome can exist
    if outcomes is None or not isinstance(exc, outcomes.OutcomeException):
        return False
    pytest_package = Path(outcomes.__file__).resolve().parent
    caller = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if pytest_package not in Path(frame.f_code.co_filename).resolve().parents:
            caller = frame
    return caller is None or not _in_subject(impl)(caller)


def _skip_reason(law: Law, impl: Implementation, dtype: torch.dtype, device: str) -> str | None:
    if impl.skip_reason:
        return impl.skip_reason
    if law.component in components.RECORDS and law.component not in impl.provided:
        return f"{law.component} not provided"
    if dtype not in law.dtypes:
        return f"law does not apply to {fmt(dtype).name}"
    declared = impl.conventions.get(law.component)
    if declared is not None and not declared.supports(dtype):  # CONVENTIONS[component]["dtypes"]
        return f"dtype not supported: {law.component} declares dtypes {', '.join(declared.dtypes or ())}"
    if "accelerator" in law.tags and device == "cpu":
        return "compares an accelerator with the CPU: not applicable on the CPU itself"
    return devices.dtype_problem(device, dtype)


def _failure_message(exc: BaseException, ctx: LawContext, notes: Sequence[str] = ()) -> str:
    """A failed result's message in the logical form of ``assertions.layout`` (wrapped where it is printed:
    ``commands.render.text.failure_text``): the failure's headline and detail, the runner's notes, what Hypothesis
    drew, and the reproduction line (the law's statement, the cause and the example count are fields of the
    result)."""
    text = str(exc) or type(exc).__name__
    headline = getattr(exc, "headline", None) or text.splitlines()[0]
    details = getattr(exc, "details", None)
    if details is None:  # an exception not raised by assertions.fail
        details = [line.strip() for line in text.splitlines()[1:] if line.strip() and "reproduce:" not in line]
        details.append(f"input: {ctx.regime()[1:-1]}")
    hyp = [n for n in getattr(exc, "__notes__", ()) if n.strip() and "reproduce_failure" not in n]
    drawn = [n if len(n) < 400 else n[:400] + " …" for n in hyp if n.startswith(("Draw", "Falsifying"))]
    return layout(headline, [*details, *notes, *drawn], getattr(exc, "reproduce", None) or ctx.repro, width=None)


# ---------------------------------------------------------------------------------------------- a selection


def select_laws(only: Iterable[str] | None = None) -> list[Law]:
    """Laws in component order; ``only``: components, law ids or law names (comma-separated allowed)."""
    order = {c: i for i, c in enumerate((*components.names(), "Module"))}
    laws = sorted(LAWS.values(), key=lambda law: order.get(law.component, len(order)))
    selectors = [s.strip() for item in (only or ()) for s in item.split(",") if s.strip()]
    if not selectors:
        return laws
    chosen: list[Law] = []
    for sel in selectors:
        match = [law for law in laws if sel.lower() in (law.component.lower(), law.id.lower(), law.name.lower())]
        if not match:
            raise UsageError(
                f"--only {sel!r} matches no component or law; components: {', '.join(components.names())}; "
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
    impl: str | None = None  # another implementation than the pool's (the catalogue runs many in one pool)
    replay: tuple[tuple[str | None, Any], ...] | None = None  # run once on these recorded draws (replay FILE)

    def run(self, impl: Implementation) -> LawResult:
        return run_law(LAWS[self.law_id], impl, dtype=self.dtype, device=self.device, profile=self.profile,
                       seed=self.seed, database=self.database, replay=self.replay)  # fmt: skip


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
