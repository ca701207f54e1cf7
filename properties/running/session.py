"""The run session: the one code that starts worker processes, for every command that runs an implementation.

A command parses its arguments into a :class:`Selection` (what to run: the laws, profile, devices, dtypes, seed,
example database and expectation files) and :class:`RunOptions` (how: workers, per-law time limit, memory cap,
torch threads), calls :func:`run` (or a :class:`Session`, for tasks of its own: the catalogue, a replay) and
renders the :class:`Run` it gets back. Every command is parse → session → render.

The session

* imports every implementation in a worker process, never in the verifier's — its usage pre-check too: a spec
  that cannot be imported, defines no component or ends its process while importing raises
  ``ImplementationError`` (a usage error, exit status 2) before any law runs;
* runs the tasks in that implementation's own workers (``workers.Pool``: an exit, a crash, a hang or a memory
  blow-up of the subject is a failed result about it; two implementations never share a process);
* applies expectations: the user's files first, then the implementation's shipped file (``expectations``);
* reports each finished result to ``on_result`` (the progress line) and stops on Ctrl-C or SIGTERM with the
  results finished by then (``Run.interrupted`` names the signal).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import shlex
import time
import warnings
from collections.abc import Callable, Iterator, Sequence

from properties.running import devices, expectations, interpreted, profiles, stops
from properties.running.loading import ImplementationError
from properties.running.runner import LawResult, Task, plan
from properties.running.workers import (
    Interrupted,
    Pool,
    SubjectInfo,
    default_memory_limit,
    default_workers,
    signals_interrupt,
)

__all__ = ["Run", "RunOptions", "Selection", "Session", "Subject", "SubjectInfo", "run"]


@dataclasses.dataclass(frozen=True)
class Selection:
    """What a run judges: the laws (``only``: components, law ids or names), dtypes and devices, under a profile
    and seed, with a shared example database, and the user's expectation files (applied before each
    implementation's shipped file, unless ``shipped_expectations`` is off)."""

    profile: str = profiles.DEFAULT_PROFILE
    devices: tuple[str, ...] = ("cpu",)
    dtypes: tuple[str, ...] | None = None
    only: tuple[str, ...] | None = None
    seed: int | None = None
    database: str | None = None
    expectations: tuple[str, ...] = ()
    shipped_expectations: bool = True

    def tasks(self) -> list[Task]:
        """Every law × device × dtype this selection runs, for one implementation (``runner.plan``)."""
        return plan(
            profile=self.profile, devices=list(self.devices), only=self.only, dtypes=self.dtypes, seed=self.seed,
            database=self.database,
        )  # fmt: skip

    def argv(self) -> list[str]:
        """The command-line options that make this selection again (for a Reproduce line)."""
        out = ["--profile", self.profile, "--device", ",".join(self.devices)]
        out += ["--only", ",".join(self.only)] if self.only else []
        out += ["--dtype", ",".join(self.dtypes)] if self.dtypes else []
        out += ["--seed", str(self.seed)] if self.seed is not None else []
        out += ["--database", self.database] if self.database else []
        out += [word for path in self.expectations for word in ("--expectations", path)]
        return out + ([] if self.shipped_expectations else ["--no-expectations"])

    def command(self, *words: str) -> str:
        """``nanolm-verify WORDS… OPTIONS`` as one shell line."""
        return shlex.join(["nanolm-verify", *words, *self.argv()])


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run goes: worker processes per implementation, the per-law time limit (s), the memory cap of a
    worker (bytes; None: none), torch's CPU threads in a worker, how Triton kernels run there ("interpret",
    "compiled", or "" where Triton is not installed: ``interpreted.choose``), and whether the implementation runs in
    a subject process of its own, out of the judge's reach (``boundary``; off only for the benches' baseline)."""

    workers: int
    timeout: float
    memory_limit: int | None = None
    threads: int = 1
    triton: str = ""
    boundary: bool = True

    @classmethod
    def of(
        cls,
        profile: str,
        *,
        workers: int | None = None,
        timeout: float | None = None,
        memory_gib: float | None = None,
        threads: int = 1,
        triton: str = "auto",
    ) -> RunOptions:
        """The options with every default filled in (the one place they are decided): one worker per CPU (at most
        one per 4 GiB), the profile's time limit, 90 % of the memory shared by the workers, Triton kernels
        interpreted where there is no CUDA device (``triton="auto"``)."""
        workers = workers or default_workers()
        memory = int(memory_gib * 2**30) if memory_gib else default_memory_limit(workers)
        chosen = interpreted.choose(
            triton, cuda="cuda" in devices.accelerators(), installed=interpreted.triton_installed()
        )
        return cls(workers, timeout or profiles.get(profile).timeout, memory, threads, chosen)


@dataclasses.dataclass
class Subject:
    """One implementation of a run: what its worker reported of it, and its results (expectations applied)."""

    info: SubjectInfo
    results: list[LawResult]


@dataclasses.dataclass
class Run:
    """What a run returns: each implementation's results, in the order named; the law runs it planned; the
    implementations that could not be imported (when tolerated: the league); the signal that stopped it; its
    duration (s, loading included) and notes for the user (expectation lines that match nothing, XPASS)."""

    selection: Selection
    subjects: list[Subject]
    planned: int
    unavailable: dict[str, str] = dataclasses.field(default_factory=dict)
    interrupted: int | None = None
    duration: float = 0.0
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def results(self) -> list[LawResult]:
        return [r for s in self.subjects for r in s.results]

    def nothing_judged(self) -> str | None:
        """One line saying why no law run was judged (every one skipped, or none ran) — None when one was. Such a
        run proves nothing: the commands exit non-zero on it unless told it is expected."""
        results = self.results
        if any(r.status != "skipped" for r in results):
            return None
        if not results:
            return f"nothing was judged: none of the {self.planned} planned law runs ran"
        reasons = collections.Counter(str(r.message).splitlines()[0] if r.message else "no reason" for r in results)
        reason, count = reasons.most_common(1)[0]
        also = f" ({len(reasons) - 1} other reason(s) too)" if len(reasons) > 1 else ""
        return f"nothing was judged: all {len(results)} law runs were skipped, {count} because {reason}{also}"


class Session:
    """Worker pools, one per implementation, started on first use and closed with the session."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self.interrupted: int | None = None
        self._pools: dict[str, Pool] = {}

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def subject(self, spec: str, *, start: int | None = None) -> SubjectInfo:
        """What ``spec`` provides, as its worker reports it (the implementation is imported there, never here);
        the first call starts its pool with ``start`` workers (default: all). ImplementationError: unusable."""
        if spec not in self._pools:
            o = self.options
            self._pools[spec] = Pool(
                spec,
                workers=o.workers,
                timeout=o.timeout,
                memory_limit=o.memory_limit,
                threads=o.threads,
                start=start,
                triton=o.triton,
                boundary=o.boundary,
            )
        return self._pools[spec].info

    def results(
        self,
        spec: str,
        tasks: Sequence[Task],
        *,
        on_result: Callable[[LawResult], None] | None = None,
        expect: Sequence[expectations.Expectation] = (),
    ) -> list[LawResult]:
        """Run ``tasks`` in the workers of ``spec`` (a task may name another implementation: the catalogue's), then
        apply ``expect`` → the results finished, in task order (all of them unless ``interrupted`` is set)."""
        info = self.subject(spec)
        pool = self._pools[spec]
        got = pool.run(tasks, on_result=on_result)
        self.interrupted = self.interrupted or pool.interrupted
        if not self.interrupted:  # every planned law run is accounted for: one that vanished is the suite's error
            for i in (i for i, r in enumerate(got) if r is None):
                got[i] = _lost(tasks[i])
                if on_result:
                    on_result(got[i])
        results = [r for r in got if r is not None]
        return expectations.apply(results, info, list(expect)) if expect else results

    def release(self, spec: str) -> None:
        """Stop the workers of ``spec`` (its memory goes back before the next implementation runs)."""
        pool = self._pools.pop(spec, None)
        if pool is not None:
            pool.close()

    def close(self) -> None:
        for spec in list(self._pools):
            self.release(spec)


def _lost(task: Task) -> LawResult:
    """The result of a planned law run whose worker gave no result back and no interruption explains it."""
    return LawResult(
        task.law_id, task.component, task.dtype, task.device, "error",
        "no result came back: the worker running it was lost (its process or the fork server died, and the pool "
        "could not tell it from a finished one); run it again", profile=task.profile, seed=task.seed, law=task.law,
    )  # fmt: skip


def _expectations(selection: Selection, info: SubjectInfo) -> list[expectations.Expectation]:
    mine = [e for path in selection.expectations for e in expectations.read(path)]
    return mine + (expectations.load(info) if selection.shipped_expectations else [])


def run(
    specs: Sequence[str],
    selection: Selection,
    options: RunOptions,
    *,
    on_subject: Callable[[SubjectInfo], None] | None = None,
    on_result: Callable[[LawResult, str], None] | None = None,
    tolerate_unavailable: bool = False,
) -> Run:
    """Judge each implementation of ``specs`` by ``selection`` → a :class:`Run`.

    Every implementation is first imported in a worker: ImplementationError, before any law runs, for one that
    cannot be used — unless ``tolerate_unavailable`` (the league): then each is loaded when its turn comes and one
    that cannot be is listed in ``Run.unavailable``. ``on_subject(info)`` is called before an implementation's
    laws run, ``on_result(result, label)`` after each law (label: the spec when several are compared, else ""),
    and ``on_result.skip(n)``, where it has one, when an unavailable implementation's n law runs will not run."""
    tasks, start = selection.tasks(), time.perf_counter()
    out = Run(selection, [], len(tasks) * len(specs))
    several = len(specs) > 1
    with Session(options) as session, signals_interrupt(), _notes(out):
        try:
            for spec in [] if tolerate_unavailable else specs:  # every usage pre-check before any law runs
                session.subject(spec, start=1 if several else None)
            for spec in specs:
                try:
                    info = session.subject(spec, start=1 if several else None)
                except ImplementationError as exc:
                    if not tolerate_unavailable:
                        raise
                    out.unavailable[spec], out.planned = str(exc), out.planned - len(tasks)
                    getattr(on_result, "skip", lambda n: None)(len(tasks))  # the progress line's N shrinks
                    continue
                if on_subject:
                    on_subject(info)
                label = spec if several else ""
                report = (lambda r, label=label: on_result(r, label)) if on_result else None
                results = session.results(spec, tasks, on_result=report, expect=_expectations(selection, info))
                session.release(spec)  # its memory goes back before the next implementation runs
                out.subjects.append(Subject(info, results))
                if session.interrupted:
                    out.interrupted = session.interrupted
                    break
        except Interrupted as exc:
            out.interrupted = exc.signum
    stops.defer_stops()  # a signal from here on stops the command after its report is written
    out.duration = time.perf_counter() - start
    return out


@contextlib.contextmanager
def _notes(out: Run) -> Iterator[None]:
    """The expectations' warnings of a run go to ``Run.notes`` (the command prints them); others pass through."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", expectations.ExpectationWarning)
        yield
    for w in caught:
        if issubclass(w.category, expectations.ExpectationWarning):
            out.notes.append(f"expectations: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
