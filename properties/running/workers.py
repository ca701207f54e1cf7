"""Isolated workers: the implementation under test runs in subject processes, the laws in judge processes.

The verifier (the parent: every command, through the run session, :mod:`properties.running.session`, the only
code that creates a :class:`Pool`) never imports the implementation. Per worker it starts two processes (forked
from a fork server that has imported torch and the laws but never run anything: :mod:`properties.running.processes`):
a *subject* process (:mod:`properties.running.subject_server`), the only one that imports the implementation, and a
*judge* process that never does. The subject reports what it provides; the judge turns that into
:class:`SubjectInfo` for the parent and then runs one law at a time on request — Hypothesis, golden values,
bounds, comparisons — calling the subject through the plain-data wire of :mod:`properties.library.remote` (no
pickle from the subject's side), and sends back the :class:`~properties.running.runner.LawResult`. The parent owns
the table, the JSON report and the exit status; whatever the subject does reaches the parent only as a result
record made by the judge:

* it exits (``sys.exit``, ``os._exit``), segfaults, or is killed (out of memory) → a failed result, cause
  ``crash``, naming the exit status or signal and the worker's last output lines; a new worker takes over;
* it runs past the per-law time limit → the worker is killed; failed, cause ``timeout``, naming the limit;
* it raises ``SystemExit``, ``KeyboardInterrupt`` (workers ignore SIGINT: only the subject can raise it there)
  or pytest's ``Skipped`` → failed, cause ``crash`` (``run_law`` reports it; this module is the backstop);
* it prints → into the worker's log file, never into the parent's output (the tail appears in crash messages);
* it patches the suite, returns a tensor subclass, writes on its pipes (a forged result, a pickle, a malformed
  message) → no judging code runs in its process, its outputs arrive as checked bytes, a frame that is not the
  wire's is its failure (``crash``) and ends the pair;
* it starts processes → they end with the worker: each worker runs in its own session and process group, killed
  as a group, and adopts (as subreaper) what leaves the group, found among its descendants when it is stopped —
  a background process never outlives the run, nor writes after it;
* it changes torch's global state → the harness reports it against the subject and restores it
  (``properties.library.state``); the worker re-establishes the assumed state before every law.

A worker's memory is capped (``RLIMIT_AS``, CPU-only runs) so a runaway allocation is a ``MemoryError`` in the
worker, not the machine's OOM killer. Hypothesis' own files go to the run's temporary directory, never to the
user's working directory. Ctrl-C or SIGTERM in the parent stops the workers (while they load the subject too);
the results so far are returned with ``interrupted`` set, so the caller can still write the table and a partial
report. A busy worker is kept until it answers, ends or times out, whatever its exit status reads (when the fork
server dies every worker reads as ended): no task is dropped (the session reports any without a result).
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import resource
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from properties.library import remote
from properties.running import interpreted, processes, subject_server
from properties.running.loading import ImplementationError
from properties.running.runner import LAWS, LawResult, Task

__all__ = [
    "Interrupted",
    "Pool",
    "SubjectInfo",
    "WorkerOptions",
    "default_memory_limit",
    "default_workers",
    "signals_interrupt",
]

_LOG_TAIL = 6  # lines of a dead worker's output quoted in its result


class Interrupted(Exception):
    """The user stopped the run (Ctrl-C or SIGTERM in the parent): ``signal`` is the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclasses.dataclass(frozen=True)
class SubjectInfo:
    """What the parent knows of the implementation: data reported by a worker, never the module itself."""

    spec: str
    module: str
    file: str | None
    provided: tuple[str, ...]
    skip_reason: str | None
    conventions: dict[str, dict[str, Any]]
    import_effects: tuple[str, ...] = ()
    kernels: str = ""  # how its Triton kernels run ("" when it has none): interpreted.describe

    @classmethod
    def unknown(cls, spec: str) -> SubjectInfo:
        """What is known of an implementation no worker has loaded (the run was interrupted first): its name."""
        return cls(spec, spec, None, (), None, {})

    @classmethod
    def of(cls, impl: Any) -> SubjectInfo:
        """The info of an implementation loaded in this process."""
        return cls(
            impl.spec,
            impl.module.__name__,
            getattr(impl.module, "__file__", None),
            tuple(impl.provided),
            impl.skip_reason,
            {c: impl.convention(c) for c in impl.provided},
            tuple(impl.import_effects),
            getattr(impl.module, "__kernels__", None) or interpreted.describe(impl.module),  # (a stand-in: reported)
        )


@dataclasses.dataclass(frozen=True)
class WorkerOptions:
    """How workers run: per-law time limit (s), memory cap (bytes, None: none), torch threads, temp directory,
    and the environment they run in (the verifier's, with Hypothesis' files sent to the temp directory)."""

    timeout: float
    memory_limit: int | None
    threads: int
    tmp: str
    environ: dict[str, str] = dataclasses.field(default_factory=dict)
    boundary: bool = True  # the implementation in a subject process of its own (off: imported by the judge)


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_workers() -> int:
    """One worker per CPU, at most one per 4 GiB of memory (the largest stored cases need ~3 GiB)."""
    memory = _physical_memory()
    by_memory = max(1, memory // 2**32) if memory else 1
    return max(1, min(os.cpu_count() or 1, by_memory))


def default_memory_limit(workers: int) -> int | None:
    """90 % of the machine's physical memory shared by the workers (None where it cannot be read)."""
    total = _physical_memory()
    return int(total * 0.9 / max(1, workers)) if total else None


# ---------------------------------------------------------------------------------------------- the worker side


def _judge_main(
    conn: multiprocessing.connection.Connection,
    wire: multiprocessing.connection.Connection | None,
    spec: str,
    options: WorkerOptions,
    log: str,
) -> None:
    """The judge process: never imports the implementation. It hears from the subject process (``wire``, plain
    data only: ``properties.library.remote``) what the implementation provides, then runs the laws the parent
    asks for against the subject's stand-in and sends back each LawResult. (``wire`` None: no subject process —
    the implementation is imported here, judge and subject in one process: ``WorkerOptions.boundary`` off.)"""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    with contextlib.suppress(OSError):
        os.setsid()  # its own process group: whatever runs under it is ended with it (_Worker.kill)
    processes.adopt_orphans()  # and what leaves the group (setsid) stays its descendant while it lives
    if wire is not None:
        _undumpable()
    processes.install_environment(options.environ)
    if wire is None:  # the implementation is imported here
        interpreted.prepare()  # Triton's interpreter and its bridges, before the subject imports Triton
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    if options.memory_limit:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (options.memory_limit, options.memory_limit))
    import torch  # imported by the fork server already (or now, when spawned)

    from properties.library import remote, state

    torch.set_num_threads(options.threads)
    link = remote.Link(wire, "the process running the implementation") if wire is not None else None
    try:
        impl = _subject_of(link, spec)
        subject_info = SubjectInfo.of(impl)
    except (EOFError, OSError):
        conn.send(("ended", None))
        return
    except ImplementationError as exc:
        conn.send(("unusable", str(exc)[:2000]))
        return
    except BaseException as exc:  # a malformed first frame; (in one process) the subject's import raising anything
        conn.send(("unusable", f"importing implementation {spec!r} raised {type(exc).__name__}: {exc}"[:2000]))
        return
    conn.send(("ready", subject_info))
    loaded = {spec: impl}
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        state.establish(options.threads)
        try:
            if link is not None:
                link.request("establish", threads=options.threads)
            if task.impl not in (None, spec) and task.impl not in loaded:
                loaded[task.impl] = _subject_of(link, task.impl, first=False)
            result = task.run(loaded[task.impl or spec])
        except BaseException as exc:  # the subject failed outside a law (its link, loading another implementation)
            result = _failed(task, "crash", f"the implementation raised {type(exc).__name__}: {exc}")
        if link is not None and link.broken:  # the subject's process ended or spoke out of turn: the pair goes
            conn.send(("last", result))
            return
        conn.send(("result", result))


def _undumpable() -> None:
    """Linux: the judge is not dumpable, so a process of the same (unprivileged) user — the subject's — can neither
    trace it nor read or write its memory through /proc/PID/mem (defence in depth; elsewhere a no-op)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def _subject_of(link: Any, spec: str, *, first: bool = True) -> Any:
    """The implementation ``spec`` as the judge sees it: the stand-in for what the subject process reported (its
    first frame, or the answer to a "load" request) — or, without a link, the implementation imported here."""
    from properties.library import remote

    if link is None:
        from properties.running.loading import load

        return load(spec)
    if first:
        header, _ = remote.receive(link.conn)
        if header.get("op") == "unusable":
            raise ImplementationError(str(header.get("message"))[:2000])
        if header.get("op") != "ready" or not isinstance(header.get("info"), dict):
            raise remote.ProtocolError(f"its first frame is {str(header.get('op'))[:40]!r}, not what it provides")
        info = remote.unpack(header["info"], [])
    else:
        info = link.request("load", spec=spec)["info"]
    impl = subject_server.stand_in(link, info)
    try:
        impl.conventions  # noqa: B018 — parsed here, by the judge
    except Exception as exc:
        raise ImplementationError(f"implementation {spec!r} declares conventions that cannot be read: {exc}") from None
    return impl


def _descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc; [] where there is none)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    found, todo = [], list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, ()))
    return found


# ---------------------------------------------------------------------------------------------- the parent side


def _failed(task: Task, cause: str, message: str) -> LawResult:
    return LawResult(
        task.law_id, task.component, task.dtype, task.device, "failed", message, cause=cause,
        profile=task.profile, seed=task.seed, law=task.law,
    )  # fmt: skip


def _ended(exitcode: int | None) -> str:
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return f"was killed by {name}{hint}"
    return f"exited with status {exitcode}"


def _detail(message: str, line: str) -> str:
    """``message`` with one more detail line (before its reproduce line, if it has one)."""
    head, sep, rest = message.partition("\nreproduce:")
    return f"{head}\n  {line}{sep}{rest}"


class _Worker:
    """One worker: a judge process and the subject process it calls (the only one that imports the implementation,
    ``subject_server``), and the task it is running. The subject's output goes to the worker's log; the judge's
    to a log of its own."""

    def __init__(self, spec: str, options: WorkerOptions, index: int) -> None:
        ctx = processes.context()
        self.spec, self.log = spec, str(Path(options.tmp) / f"worker-{index}.log")
        judge_log = str(Path(options.tmp) / f"judge-{index}.log")
        self.conn, child = ctx.Pipe()
        if options.boundary:
            wire_judge, wire_subject = remote.wire(ctx)
            self.subject = ctx.Process(
                target=subject_server.main, args=(wire_subject, spec, options, self.log), daemon=True
            )
            self.subject.start()
            wire_subject.close()
        else:  # judge and subject in one process: its output is the subject's
            wire_judge, judge_log, self.subject = None, self.log, None
        self.proc = ctx.Process(target=_judge_main, args=(child, wire_judge, spec, options, judge_log), daemon=True)
        self.proc.start()
        child.close()
        if wire_judge is not None:
            wire_judge.close()
        self.task: tuple[int, Task] | None = None
        self.deadline = 0.0

    def _lines(self) -> list[str]:
        try:
            lines = Path(self.log).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        return [ln[:200] for ln in lines if ln.strip()][-_LOG_TAIL:]

    def tail(self) -> str:
        """The worker's last output lines, as the indented end of a result's message ("" when it printed none)."""
        lines = self._lines()
        return ("\n  worker output (last lines):\n    " + "\n    ".join(lines)) if lines else ""

    def _last_words(self) -> str:
        """The worker's last output line, for a one-line usage error ("" when it printed none)."""
        lines = self._lines()
        return f" (its last output: {lines[-1][:120]})" if lines else ""

    def hello(self, timeout: float) -> SubjectInfo:
        """Wait for the worker to load the implementation → its SubjectInfo (ImplementationError if unusable:
        one line, a usage error)."""
        if not self.conn.poll(timeout):
            self.kill()
            raise ImplementationError(f"loading the implementation took more than {timeout:g} s{self._last_words()}")
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            kind, payload = "ended", None
        if kind == "ended":
            ended = self.subject or self.proc
            ended.join(5)
            self.kill()
            raise ImplementationError(
                f"importing implementation {self.spec!r} ended its process: it {_ended(ended.exitcode)}"
                + self._last_words()
            ) from None
        if kind != "ready":
            self.kill()
            raise ImplementationError(payload)
        return payload

    def send(self, index: int, task: Task, timeout: float) -> None:
        self.task = (index, task)
        self.deadline = time.monotonic() + timeout
        self.conn.send(task)

    def receive(self) -> LawResult:
        """The result of the running task (a crash result when the worker died)."""
        _, task = self.task
        self.task = None
        try:
            kind, payload = self.conn.recv()
            if kind in ("result", "last") and isinstance(payload, LawResult) and payload.law_id == task.law_id:
                if kind == "last":  # the judge lost its subject (it ended, or broke the wire): say how; replace both
                    ended = remote.ENDED in (payload.message or "")
                    self.subject.join(5 if ended else 0)
                    if ended and payload.status == "failed" and self.subject.exitcode is not None:
                        how = f"the worker process running the implementation {_ended(self.subject.exitcode)}"
                        payload.message = _detail(payload.message or "", how + self.tail())
                    self.kill()
                return payload
            message = f"the judge answered {kind!r} instead of a result"
        except (EOFError, OSError):
            self.proc.join(5)
            gone = self.proc
            if self.subject is not None:
                self.subject.join(1)
                gone = self.subject if not self.subject.is_alive() else self.proc
            message = f"the worker process running the implementation {_ended(gone.exitcode)}"
        self.kill()
        return _failed(task, "crash", message + self.tail())

    def timed_out(self, timeout: float) -> LawResult:
        _, task = self.task
        self.task = None
        self.kill()
        return _failed(
            task, "timeout", f"no verdict within {timeout:g} s (the per-law time limit; --timeout S changes it)"
            + self.tail(),
        )  # fmt: skip

    @property
    def _processes(self) -> list[Any]:
        return [p for p in (self.subject, self.proc) if p is not None]

    @property
    def alive(self) -> bool:
        return all(p.is_alive() for p in self._processes)

    def kill(self, escaped: list[int] | None = None) -> None:
        """End the worker — its judge and its subject process, every process of their groups and their descendants
        (what the subject started: a background process must not outlive the run, nor write after it), whatever
        their exit status reads. ``escaped``: their descendants, when found before they were told to stop (after
        they end those are init's)."""
        procs = self._processes
        if escaped is None:
            escaped = [d for p in procs if p.pid is not None for d in _descendants(p.pid)]
        for p in procs:
            if p.is_alive():
                p.kill()
            if p.pid is not None:
                with contextlib.suppress(OSError):
                    os.killpg(p.pid, signal.SIGKILL)
        for child in escaped:
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        for p in procs:
            p.join(5)
        self.conn.close()

    def stop(self) -> None:
        escaped = [d for p in self._processes if p.pid is not None for d in _descendants(p.pid)]  # while adopted
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        for p in self._processes:  # the subject returns when its link with the judge closes
            p.join(2)
        self.kill(escaped)


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM (and SIGINT) raise Interrupted in the parent while workers run."""

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for s in saved:
            signal.signal(s, handler)
    except ValueError:  # not the main thread: leave signals alone
        saved = {}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


class Pool:
    """Workers for one implementation: ``info`` (what it provides), ``run(tasks)`` → results in task order.

    ``start`` workers (default: all ``workers``) start now and load the implementation side by side; the first to
    load it answers ``info`` (ImplementationError when it cannot be used); the others start when ``run`` needs them.
    """

    def __init__(
        self,
        spec: str,
        *,
        workers: int = 1,
        timeout: float = 300.0,
        memory_limit: int | None = None,
        threads: int = 1,
        start: int | None = None,
        triton: str = "",
        boundary: bool = True,
    ) -> None:
        self.spec = spec
        self.size = max(1, workers)
        self._tmp = tempfile.mkdtemp(prefix="nanolm-verify-")
        environ = {**processes.environment(), "HYPOTHESIS_STORAGE_DIRECTORY": str(Path(self._tmp) / "hypothesis")}
        environ.update(interpreted.worker_environ(triton))  # the workers' only: the verifier's stays as it is
        self.options = WorkerOptions(timeout, memory_limit, threads, self._tmp, environ, boundary)
        self._started = 0
        self._workers: list[_Worker] = []
        self.interrupted: int | None = None  # the signal that stopped the run, if one did
        count = self.size if start is None else max(1, min(start, self.size))
        started = [self._spawn() for _ in range(count)]  # started together: subjects load side by side
        try:
            self.info = started[0].hello(max(120.0, timeout))
        except BaseException:
            for w in started:
                w.kill()
            self.close()  # the run's temporary directory (the worker logs) goes too
            raise
        self._workers.append(started[0])
        for i, w in enumerate(started[1:], 1):
            try:
                w.hello(max(120.0, timeout))
            except (ImplementationError, OSError):  # the first one loaded: one failing later is replaced when needed
                w.kill()
            except BaseException:  # an interruption (Ctrl-C, SIGTERM) stops the run, never a worker alone
                for other in started[i:]:
                    other.kill()
                self.close()
                raise
            else:
                self._workers.append(w)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        self._started += 1
        return _Worker(self.spec, self.options, self._started)

    def _ready_worker(self) -> _Worker:
        w = self._spawn()
        w.hello(max(120.0, self.options.timeout))
        return w

    def run(
        self, tasks: Sequence[Task], on_result: Callable[[LawResult], None] | None = None
    ) -> list[LawResult | None]:
        """Run every task; results in task order (None for tasks an interruption left unrun). The laws without
        drawn examples (the stored-golden laws, the longest of a ci run, and the structural ones, instant) are
        handed out first, so that no worker starts a long task while the others run out of work."""
        results: list[LawResult | None] = [None] * len(tasks)
        pending = sorted(enumerate(tasks), key=lambda it: LAWS[it[1].law_id].uses_hypothesis)[::-1]
        timeout = self.options.timeout
        with signals_interrupt():
            try:
                while pending or any(w.task for w in self._workers):
                    self._workers = [w for w in self._workers if w.alive or w.task]
                    while pending and len(self._workers) < self.size:
                        self._workers.append(self._ready_worker())
                    for w in self._workers:
                        if w.task is None and pending:
                            w.send(*pending.pop(), timeout)
                    busy = [w for w in self._workers if w.task]
                    wait = max(0.0, min(w.deadline for w in busy) - time.monotonic())
                    ready = multiprocessing.connection.wait([w.conn for w in busy], timeout=wait)
                    for w in busy:
                        index = w.task[0]
                        if w.conn in ready:
                            result = w.receive()
                        elif time.monotonic() >= w.deadline:
                            result = w.timed_out(timeout)
                        else:
                            continue
                        results[index] = result
                        if on_result:
                            on_result(result)
                    # a busy worker stays until it answers, ends (EOF) or times out: one that merely *looks* dead
                    # (its fork server died: every exit status reads 255) would otherwise take its task with it
                    self._workers = [w for w in self._workers if w.alive or w.task]
            except Interrupted as exc:
                self.interrupted = exc.signum
            except KeyboardInterrupt:
                self.interrupted = signal.SIGINT
        return results

    def close(self) -> None:
        for w in self._workers:
            w.stop() if w.task is None else w.kill()
        self._workers = []
        shutil.rmtree(self._tmp, ignore_errors=True)
