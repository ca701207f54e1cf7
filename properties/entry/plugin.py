"""pytest plugin (entry point ``nanolm_verify``), safe to auto-load in any project.

Installing the package loads this plugin into every pytest run, so it changes nothing until the laws are used:

* its options carry the project's prefix — ``--impl`` (the contract's name), ``--nanolm-profile``,
  ``--nanolm-expectations``, ``--nanolm-no-shipped-expectations`` — and its fixtures too (``nanolm_impl``,
  ``nanolm_law_runner`` …); its one marker is ``nanolm_cuda``;
* it never registers nor loads a Hypothesis profile: the user's own profiles, settings and example database stay
  as the user's conftest made them;
* it prints its header only when tests that run laws were collected.

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
for a test outside that directory).
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
from hypothesis import settings
from hypothesis.errors import InvalidArgument

from properties.running import expectations, profiles
from properties.running.loading import ENV_VAR, ImplementationError, load, resolve_spec

_MAPPED = "hypothesis:"  # law profile made from a Hypothesis profile: "hypothesis:<name>"
_LAWS = "nanolm_verify_law"  # user_properties key of a test that ran a law (counted for the summary)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nanolm-verify", "nanolm-verify (numerical laws of RMSNorm, SwiGLU, Block, AddRMSNorm)")
    group.addoption(
        "--impl",
        default=None,
        help=f"implementation to check (module, .py path or adapter id); overrides ${ENV_VAR}; default nanolm_core",
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
        help="your expectation file (format: properties/running/expectations.py); repeatable; its entries come "
        "before the implementation's shipped file",
    )
    group.addoption(
        "--nanolm-no-shipped-expectations",
        action="store_true",
        help="ignore the expectation file shipped for the implementation (properties/expectations/<id>.txt)",
    )


# ---------------------------------------------------------------------------------------------- the law profile


def mapped_profile(name: str, base: profiles.Profile | None = None) -> profiles.Profile:
    """The law profile made from the registered Hypothesis profile ``name`` (see the module docstring)."""
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
    config.addinivalue_line("markers", "nanolm_cuda: a nanolm-verify law on a CUDA device (skipped without one)")
    config.pluginmanager.register(_Run(config), "nanolm-verify-run")


class _Run:
    """This run's state: the law profile made from a Hypothesis profile (if any), the header, the law count."""

    def __init__(self, config: pytest.Config) -> None:
        self.config, self.laws, self.header, self.added = config, 0, False, None
        name, _ = _law_profile(config)
        if name.startswith(_MAPPED) and name not in profiles.PROFILES:
            try:
                profiles.PROFILES[name] = mapped_profile(name.removeprefix(_MAPPED))
            except InvalidArgument:
                return  # Hypothesis' own plugin reports the unknown profile
            self.added = name  # removed at unconfigure: the table is the suite's, not this run's

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.added:
            profiles.PROFILES.pop(self.added, None)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The header, once, when the collected tests run laws (never in a project that does not use them)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or hasattr(self.config, "workerinput") or not any(map(_uses_laws, session.items)):
            return
        reporter.write_line(_header(self.config))
        self.header = True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count the tests that ran a law (under xdist too: user_properties travel with the reports)."""
        if report.when == "call" and any(key == _LAWS for key, _ in report.user_properties):
            self.laws += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.laws and not self.header:  # under xdist the controller collects nothing itself
            terminalreporter.write_line(_header(self.config) + f" ({self.laws} law tests)")


def _uses_laws(item: pytest.Item) -> bool:
    return "nanolm_law_runner" in getattr(item, "fixturenames", ())


def _header(config: pytest.Config) -> str:
    spec = resolve_spec(option=config.getoption("--impl", default=None))
    name, _ = _law_profile(config)
    files = config.getoption("--nanolm-expectations", default=[]) or []
    extra = f", expectations {', '.join(files)}" if files else ""
    seed = config.getoption("hypothesis_seed", default=None)
    return f"nanolm-verify: implementation {spec}, law profile {name}{extra}" + (f", seed {seed}" if seed else "")


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def nanolm_impl(request: pytest.FixtureRequest) -> Any:
    """The implementation under test (--impl > $NANOLM_IMPL > nanolm_core), loaded in this process."""
    spec = resolve_spec(option=request.config.getoption("--impl"))
    try:
        return load(spec)
    except ImplementationError as exc:
        pytest.exit(f"nanolm-verify: {exc}", returncode=2)


@pytest.fixture(scope="session")
def nanolm_law_profile(request: pytest.FixtureRequest) -> str:
    """The law profile of this run (see the module docstring for the precedence)."""
    name, _ = _law_profile(request.config)
    if name not in profiles.PROFILES:
        pytest.exit(f"nanolm-verify: Hypothesis profile {name.removeprefix(_MAPPED)!r} is not registered", 2)
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
        module = getattr(getattr(item, "module", None), "__name__", path.stem)
        target = ["--pyargs", shlex.quote(f"{module}::{rest}")]
    return " ".join(["pytest", *target, *options])


def measurements(result: Any) -> list[tuple[str, Any]]:
    """The law's numbers as (name, value) test properties: max ULP, headroom, bound, examples, status."""
    bound = result.bound or {}
    props = [
        ("nanolm_status", result.status),
        ("nanolm_max_ulp", None if result.max_ulp is None else float(result.max_ulp)),
        ("nanolm_headroom", None if result.headroom is None else float(result.headroom)),
        ("nanolm_bound_ulps", bound.get("ulps")),
        ("nanolm_bound", bound.get("formula")),
        ("nanolm_examples", result.examples),
    ]
    plain = (str, int, float, bool)  # xdist serializes them (numpy scalars it does not)
    return [(name, value if isinstance(value, plain) else str(value)) for name, value in props if value is not None]


@pytest.fixture
def nanolm_law_runner(
    request: pytest.FixtureRequest,
    nanolm_impl: Any,
    nanolm_law_profile: str,
    nanolm_law_seed: int | None,
    nanolm_expectations: list[Any],
) -> Callable[..., Any]:
    """run(law_id, dtype, device) → LawResult; passes, skips, xfails (an expectation entry) or fails the test
    with the law's message and a reproduction line for this very test."""
    from properties.running.runner import LAWS, run_law  # the law library loads on first use

    item = request.node
    _, selects = _law_profile(request.config)

    options = ["--impl", shlex.quote(nanolm_impl.spec), *selects]
    options += [f"--nanolm-expectations={shlex.quote(f)}" for f in request.config.getoption("--nanolm-expectations")]

    def repro(seed: int | None) -> str:  # a command for this very test, from its node id
        return repro_command(item, [*options, *([f"--hypothesis-seed={seed}"] if seed is not None else [])])

    def run(law_id: str, dtype: Any, device: str = "cpu") -> Any:
        law = LAWS[law_id]
        result = run_law(
            law, nanolm_impl, dtype=dtype, device=device, profile=nanolm_law_profile, seed=nanolm_law_seed,
            repro=repro,
        )  # fmt: skip
        item.user_properties.append((_LAWS, law_id))
        for name, value in measurements(result):  # record_property: JUnit XML carries them
            item.user_properties.append((name, value))
        [result] = expectations.apply([result], nanolm_impl, nanolm_expectations, warn=False)
        if result.status == "xfailed":
            pytest.xfail(result.message.splitlines()[0])
        if result.status == "xpassed":
            warnings.warn(result.message, expectations.ExpectationWarning, stacklevel=2)
            return result
        if result.status == "skipped":
            pytest.skip(result.message)
        if result.status != "passed":
            found = f" (found after {result.found_after} examples)" if result.found_after else ""
            pytest.fail(f"{result.law_id} {result.status}{found}: {result.law}\n{result.message}", pytrace=False)
        return result

    return run
