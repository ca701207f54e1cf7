"""pytest plugin (entry point ``nanolm_verify``), safe to auto-load in any project.

Installing the package loads this plugin into every pytest run, so it costs nothing and changes nothing until the
laws are used:

* at start-up it only registers its options and its marker: this module imports pytest and the standard library
  (and the table of profile names); torch, Hypothesis, the law library and the implementation are imported when a
  law test is collected or run (as Hypothesis' own plugin defers ``import hypothesis``);
* its options carry the project's prefix — ``--impl`` (the contract's name), ``--nanolm-profile``,
  ``--nanolm-expectations``, ``--nanolm-no-shipped-expectations`` — and its fixtures too (``nanolm_impl``,
  ``nanolm_subject``, ``nanolm_law_runner`` …); its one marker is ``nanolm_cuda``;
* the implementation runs in a process of its own (``nanolm_subject``, started when a law first needs it, again
  after it crashed): pytest's process judges — Hypothesis, golden values, bounds, the outcome — and never imports
  it, so nothing the implementation does in its process (patching the suite, a lying tensor, writing on its pipes)
  reaches an outcome;
* it never registers nor loads a Hypothesis profile, and registers nothing with Hypothesis: the user's own
  profiles, settings, example database and random generators stay as the user's conftest made them (torch's
  global generator is seeded and restored around each law example only: ``runner._seeded_torch_rng``);
* it prints its header only when tests that run laws were collected.

Outcomes are pytest's own: a law that fails fails the test (``LawFailed``, a ``pytest.fail`` outcome, with the
law's message and a reproduction line for this very test); an expectation entry (``--nanolm-expectations``, the
implementation's shipped file; law ids or the node ids pytest prints) marks the test ``xfail`` — an unexpected
pass is pytest's XPASS, a failure of the session under ``xfail_strict`` — or skips it; a law not applicable skips.
What pytest or another plugin raises while a law runs (pytest-timeout's ``Failed``, ``Exit``, Ctrl-C) reaches
pytest as it was raised and is never reported against the implementation.

Law tests on a CUDA device (marker ``nanolm_cuda``) are not collected on a machine without CUDA — one summary line
says how many were left out — unless they are asked for (``-m nanolm_cuda``): then they skip with the reason.

Law profile of a run (the budget ``run_law`` gets), in order of precedence:

1. ``--nanolm-profile ci|dev|thorough``: the suite's own profile;
2. ``--hypothesis-profile NAME`` (Hypothesis' own option, the user's profile): mapped onto a law run as
   ``max_examples`` → the budget of a cheap law (a law of cost k runs max(1, n // k) examples), ``derandomize``
   → derandomized, ``print_blob`` → print_blob; ``max_examples ≥ 1000`` also draws the large-D tier (as
   ``thorough``); time limit and shrink budget are those of ``dev``. The profile's database, deadline, phases and
   health checks are not used: a law run is reproduced by (profile, seed), never by local state;
3. ``$HYPOTHESIS_PROFILE`` when it names one of the suite's profiles (as ``nanolm-verify check`` reads it);
4. ``dev``.

``--hypothesis-seed S`` seeds every law (each law derives its own seed from S and its id, dtype and device).
A failure's reproduction line is built from the test's own node id and the options of the run, and works in
the directory where it is printed (``pytest 'path::test[id]' …``, or ``pytest --pyargs 'module::test[id]' …``
for a test outside that directory). Each law test records its measurements as test properties (JUnit XML):
``nanolm_headroom`` first — the number to read — then the bound at that element, the max ULP error and the
element it belongs to (``measurements``).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from properties.library import components  # the records: names only, nothing heavy
from properties.running import profiles  # names and numbers only: Hypothesis is imported when settings are made

_MAPPED = "hypothesis:"  # law profile made from a Hypothesis profile: "hypothesis:<name>"
_LAWS = "nanolm_verify_law"  # user_properties key of a test that ran a law (counted for the summary)
_LEFT_OUT = "nanolm_cuda_left_out"  # workeroutput key (xdist): CUDA law tests a worker did not collect
_CUDA_MARK = "nanolm_cuda"
IMPL_ENV = "NANOLM_IMPL"  # = properties.running.loading.ENV_VAR (which imports torch; a test ties the two)


class LawFailed(pytest.fail.Exception):
    """A law does not hold for the implementation (the test's failure; an expectation entry's ``xfail`` covers
    exactly this outcome — a suite error or a crash of the test harness is never an expected failure)."""

    __module__ = "builtins"  # pytest prints "LawFailed: …", as it prints its own "Failed: …"

    def __init__(self, message: str, brief: str) -> None:
        super().__init__(message, pytrace=False)
        self.brief = brief  # one line: the headline and the reproduction command (pytest's short summary)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nanolm-verify", f"nanolm-verify (numerical laws of {', '.join(components.names())})")
    group.addoption(
        "--impl",
        default=None,
        help=f"implementation to check (module, .py path or adapter id); overrides ${IMPL_ENV}; default nanolm_core",
    )
    group.addoption(
        "--nanolm-profile",
        default=None,
        choices=tuple(profiles.PROFILES),
        help="the laws' budget: ci (derandomized, fast), dev (default), thorough (≥ 1000 examples, large D); "
        "overrides --hypothesis-profile and $HYPOTHESIS_PROFILE for the laws only",
    )
    group.addoption(
        "--nanolm-expectations",
        action="append",
        default=[],
        metavar="FILE",
        help="your expectation file (law ids or pytest node ids; format: properties/running/expectations.py); "
        "repeatable; its entries come before the implementation's shipped file",
    )
    group.addoption(
        "--nanolm-no-shipped-expectations",
        action="store_true",
        help="ignore the expectation file shipped for the implementation (properties/expectations/<id>.txt)",
    )


# ---------------------------------------------------------------------------------------------- the law profile


def mapped_profile(name: str, base: profiles.Profile | None = None) -> profiles.Profile:
    """The law profile made from the registered Hypothesis profile ``name`` (see the module docstring)."""
    from hypothesis import settings

    hyp = settings.get_profile(name)  # InvalidArgument when it is not registered
    base = base or profiles.PROFILES[profiles.DEFAULT_PROFILE]
    return dataclasses.replace(
        base,
        name=_MAPPED + name,
        max_examples=hyp.max_examples,
        derandomize=hyp.derandomize,
        print_blob=hyp.print_blob,
        slow=hyp.max_examples >= profiles.PROFILES["thorough"].max_examples,
    )


def _law_profile(config: pytest.Config) -> tuple[str, list[str]]:
    """(law profile name, the options that select it in a reproduction line)."""
    name = config.getoption("--nanolm-profile", default=None)
    if name:
        return name, ["--nanolm-profile", name]
    hyp = config.getoption("hypothesis_profile", default=None)
    if hyp:
        return _MAPPED + hyp, [f"--hypothesis-profile={hyp}"]
    env = os.environ.get(profiles.ENV_VAR)
    name = env if env in profiles.PROFILES else profiles.DEFAULT_PROFILE
    return name, ["--nanolm-profile", name]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{_CUDA_MARK}: a nanolm-verify law on a CUDA device (skipped without one)")
    config.pluginmanager.register(_Run(config), "nanolm-verify-run")


class _Run:
    """This run's state: the header, the law count, the CUDA law tests left out, a mapped law profile."""

    def __init__(self, config: pytest.Config) -> None:
        self.config, self.laws, self.header, self.left_out = config, 0, False, 0
        self.added: str | None = None  # a law profile this run added to the suite's table (removed at the end)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.added:
            profiles.PROFILES.pop(self.added, None)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Leave out the CUDA law tests where torch sees no CUDA device, unless ``-m`` asks for them."""
        cuda = [item for item in items if item.get_closest_marker(_CUDA_MARK)]
        if not cuda or _CUDA_MARK in (config.getoption("markexpr", default="") or ""):
            return
        import torch  # the law tests were collected: torch is imported already

        if torch.cuda.is_available():
            return
        dropped = set(map(id, cuda))
        items[:] = [item for item in items if id(item) not in dropped]
        config.hook.pytest_deselected(items=cuda)
        self.left_out = len(cuda)
        if hasattr(config, "workeroutput"):  # an xdist worker: the controller prints the summary line
            config.workeroutput[_LEFT_OUT] = self.left_out

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """(xdist controller) what each worker left out: they all collect the same tests."""
        self.left_out = max(self.left_out, getattr(node, "workeroutput", {}).get(_LEFT_OUT, 0))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The header, once, when the collected tests run laws (never in a project that does not use them); and the
        fork server the implementation's process will come from starts its imports now, beside pytest's own work."""
        if not any(map(_uses_laws, session.items)):
            return
        from properties.running import processes

        processes.warm_up()
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or hasattr(self.config, "workerinput"):
            return
        reporter.write_line(_header(self.config))
        self.header = True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        """A law's (or a drop-in assertion's) failure is one line in pytest's short summary (``-rf``; printed whole
        under ``-vv`` and in CI): its headline and its reproduction command, not the whole message again."""
        report = yield
        crash = getattr(report.longrepr, "reprcrash", None)
        brief = getattr(call.excinfo.value, "brief", None) if call.excinfo is not None else None
        if isinstance(brief, str) and crash is not None:
            crash.message = f"{type(call.excinfo.value).__name__}: {brief}"
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count the tests that ran a law (under xdist too: user_properties travel with the reports)."""
        if report.when == "call" and any(key == _LAWS for key, _ in report.user_properties):
            self.laws += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.laws and not self.header:  # under xdist the controller collects nothing itself
            terminalreporter.write_line(_header(self.config) + f" ({self.laws} law test{'s' * (self.laws != 1)})")
        if self.left_out and not hasattr(self.config, "workerinput"):
            tests = "test" if self.left_out == 1 else "tests"
            terminalreporter.write_line(
                f"nanolm-verify: {self.left_out} CUDA law {tests} left out (no CUDA; -m {_CUDA_MARK} adds them)"
            )


def _uses_laws(item: pytest.Item) -> bool:
    return "nanolm_law_runner" in getattr(item, "fixturenames", ())


def _header(config: pytest.Config) -> str:
    from properties.running.loading import resolve_spec  # (laws were collected: torch is imported already)

    spec = resolve_spec(option=config.getoption("--impl", default=None))
    name, _ = _law_profile(config)
    files = config.getoption("--nanolm-expectations", default=[]) or []
    extra = f", expectations {', '.join(files)}" if files else ""
    seed = config.getoption("hypothesis_seed", default=None)
    return f"nanolm-verify: implementation {spec}, law profile {name}{extra}" + (f", seed {seed}" if seed else "")


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def nanolm_subject(request: pytest.FixtureRequest) -> Any:
    """The implementation under test (--impl > $NANOLM_IMPL > nanolm_core) in a process of its own
    (``subject_server.Subject``): this process judges and never imports it. Ended with the session."""
    from properties.running.loading import ImplementationError, resolve_spec
    from properties.running.subject_server import Subject

    spec = resolve_spec(option=request.config.getoption("--impl"))
    try:
        subject = Subject(spec)
    except ImplementationError as exc:
        pytest.exit(f"nanolm-verify: {exc}", returncode=2)
    yield subject
    subject.close()


@pytest.fixture(scope="session")
def nanolm_impl(nanolm_subject: Any) -> Any:
    """The implementation under test as the laws see it: the stand-in for the subject process's
    (``properties.library.remote``)."""
    return nanolm_subject.implementation()


@pytest.fixture(scope="session")
def nanolm_law_profile(request: pytest.FixtureRequest) -> str:
    """The law profile of this run (see the module docstring for the precedence)."""
    from hypothesis.errors import InvalidArgument

    name, _ = _law_profile(request.config)
    if name.startswith(_MAPPED) and name not in profiles.PROFILES:
        try:
            profiles.PROFILES[name] = mapped_profile(name.removeprefix(_MAPPED))
        except InvalidArgument:
            pytest.exit(f"nanolm-verify: Hypothesis profile {name.removeprefix(_MAPPED)!r} is not registered", 2)
        request.config.pluginmanager.get_plugin("nanolm-verify-run").added = name  # the table is the suite's
    return name


@pytest.fixture(scope="session")
def nanolm_law_seed(request: pytest.FixtureRequest) -> int | None:
    """--hypothesis-seed, if given (it overrides the profile's derandomization)."""
    seed = request.config.getoption("hypothesis_seed", default=None)
    return int(seed) if seed not in (None, "") else None


@pytest.fixture(scope="session")
def nanolm_expectations(request: pytest.FixtureRequest, nanolm_impl: Any) -> list[Any]:
    """The run's expectation entries: --nanolm-expectations files first, then the implementation's shipped file.
    Entries naming no known law are reported once, as ExpectationWarnings."""
    from properties.running import expectations

    config = request.config
    try:
        entries = expectations.combined(
            nanolm_impl,
            config.getoption("--nanolm-expectations") or [],
            shipped=not config.getoption("--nanolm-no-shipped-expectations"),
        )
    except expectations.ExpectationError as exc:
        pytest.exit(f"nanolm-verify: {exc}", returncode=2)
    for e in expectations.unmatched(entries):
        warnings.warn(f"{e.where}: expectation {e.pattern} matches no known law id", expectations.ExpectationWarning)
    return entries


def repro_command(item: pytest.Item, options: list[str]) -> str:
    """``pytest '<node>' OPTIONS`` that runs this one test again from the directory pytest was started in."""
    here = Path(item.config.invocation_params.dir)
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else ""
    path = Path(str(item.path))
    try:
        target = [shlex.quote(f"{path.relative_to(here).as_posix()}::{rest}")]
    except ValueError:  # outside the invocation directory (an installed package): name it by module
        target = ["--pyargs", shlex.quote(f"{_module_name(item)}::{rest}")]
    return " ".join(["pytest", *target, *options])


def _module_name(item: pytest.Item) -> str:
    return getattr(getattr(item, "module", None), "__name__", Path(str(item.path)).stem)


def node_ids(item: pytest.Item) -> list[str]:
    """The ids an expectation line may name this test by: its node id as pytest prints it, by module name, and by
    its absolute path (``expectations.Expectation.matches``)."""
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return [item.nodeid, f"{_module_name(item)}::{rest}", f"{Path(str(item.path)).as_posix()}::{rest}"]


def measurements(result: Any) -> list[tuple[str, Any]]:
    """The law's numbers as (name, value) test properties, headroom first (max error ÷ bound over the examples:
    ≤ 1 passes, the number to read), then the bound in ULPs at the element where it was reached, the max ULP
    error and the element it belongs to (another one in general: near a cancellation a large ULP error is a
    small headroom), the status, the examples and the bound's formula."""
    bound = result.bound or {}
    worst = result.worst_input or {}
    at = None
    if "worst_index" in worst:
        index, g, a = tuple(worst["worst_index"]), worst.get("worst_golden"), worst.get("worst_actual")
        at = f"index {index}: golden {g}, actual {a}"
    props = [
        ("nanolm_headroom", None if result.headroom is None else float(result.headroom)),
        ("nanolm_headroom_bound_ulps", bound.get("ulps")),
        ("nanolm_max_ulp", None if result.max_ulp is None else float(result.max_ulp)),
        ("nanolm_max_ulp_at", at),
        ("nanolm_status", result.status),
        ("nanolm_examples", result.examples),
        ("nanolm_bound", bound.get("formula")),
    ]
    plain = (str, int, float, bool)  # xdist serializes them (numpy scalars it does not)
    return [(name, value if isinstance(value, plain) else str(value)) for name, value in props if value is not None]


@pytest.fixture
def nanolm_law_runner(
    request: pytest.FixtureRequest,
    nanolm_subject: Any,
    nanolm_impl: Any,
    nanolm_law_profile: str,
    nanolm_law_seed: int | None,
    nanolm_expectations: list[Any],
) -> Callable[..., Any]:
    """run(law_id, dtype, device) → LawResult; passes, skips, xfails (an expectation entry: pytest's xfail, so an
    unexpected pass is XPASS) or fails the test with the law's message and a reproduction line for this very test."""
    from golden.formats import fmt
    from properties.commands.render.text import failure_text
    from properties.running import expectations
    from properties.running.runner import LAWS, run_law

    item = request.node
    _, selects = _law_profile(request.config)

    options = ["--impl", shlex.quote(nanolm_impl.spec), *selects]
    options += [f"--nanolm-expectations={shlex.quote(f)}" for f in request.config.getoption("--nanolm-expectations")]

    def repro(seed: int | None) -> str:  # a command for this very test, from its node id
        return repro_command(item, [*options, *([f"--hypothesis-seed={seed}"] if seed is not None else [])])

    def run(law_id: str, dtype: Any, device: str = "cpu") -> Any:
        law = LAWS[law_id]
        entry = expectations.find(nanolm_expectations, law_id, fmt(dtype).name, device, node_ids(item))
        if entry is not None and entry.action == "skip":
            pytest.skip(f"expected skip ({entry.where}): {entry.reason}")
        if entry is not None:  # xfail: pytest judges the outcome (XFAIL, XPASS, XPASS(strict) under xfail_strict)
            item.add_marker(
                pytest.mark.xfail(reason=f"expected failure ({entry.where}): {entry.reason}", raises=LawFailed)
            )
        result = run_law(
            law, nanolm_subject.implementation(), dtype=dtype, device=device, profile=nanolm_law_profile,
            seed=nanolm_law_seed, repro=repro,
        )  # fmt: skip
        item.user_properties += measurements(result)  # record_property: JUnit XML carries them, headroom first
        item.user_properties.append((_LAWS, law_id))
        if result.status == "xfailed":  # a declared convention no bound models (runner._honour_declaration)
            pytest.xfail(result.message.splitlines()[0])
        if result.status == "skipped":
            pytest.skip(result.message)
        if result.status == "failed":
            raise LawFailed(failure_text(result, marked=False), failure_text(result, brief=True, marked=False))
        if result.status != "passed":  # an error of the suite: never an expected failure
            pytest.fail(failure_text(result, marked=False), pytrace=False)
        return result

    return run
