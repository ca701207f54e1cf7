"""pytest plugin (entry point ``nanolm_verify``): ``--impl`` selects the implementation under test, ``--profile``
the Hypothesis profile of the laws.

Fixtures: ``impl`` (the loaded properties.impl.Implementation), ``law_profile`` (profile name for
``run_law``), ``law_seed`` (``--hypothesis-seed`` when given, else None), ``law_runner`` (runs one law against
``impl`` and turns its LawResult into pass / skip / fail with the law's message, or xfail where the implementation's
expectation file documents the failure).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings

from properties.running import profiles
from properties.running.loading import ENV_VAR, ImplementationError, load, resolve_spec


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nanolm-verify")
    group.addoption(
        "--impl",
        default=None,
        help=f"implementation to check (module, .py path or adapter id); overrides ${ENV_VAR}; default nanolm_core",
    )
    group.addoption(
        "--profile",
        default=None,
        choices=("ci", "dev", "thorough"),
        help="Hypothesis profile of the laws: ci (derandomized, fast), dev (default), thorough (≥ 1000 examples); "
        "overrides $HYPOTHESIS_PROFILE",
    )


def _profile_name(config: pytest.Config) -> str:
    name = config.getoption("--profile", default=None)
    if name:
        return name
    env = os.environ.get(profiles.ENV_VAR)
    return env if env in profiles.PROFILES else profiles.DEFAULT_PROFILE


def pytest_configure(config: pytest.Config) -> None:
    profiles.register()
    if config.getoption("--profile", default=None) or os.environ.get(profiles.ENV_VAR) in profiles.PROFILES:
        settings.load_profile(_profile_name(config))  # plain @given tests follow the same profile


def pytest_report_header(config: pytest.Config) -> str:
    spec = resolve_spec(option=config.getoption("--impl", default=None))
    return f"nanolm-verify: implementation {spec}, law profile {_profile_name(config)}"


@pytest.fixture(scope="session")
def impl(request: pytest.FixtureRequest):
    """The implementation under test (CLI --impl > $NANOLM_IMPL > nanolm_core)."""
    spec = resolve_spec(option=request.config.getoption("--impl"))
    try:
        return load(spec)
    except ImplementationError as exc:
        pytest.exit(f"nanolm-verify: {exc}", returncode=2)


@pytest.fixture(scope="session")
def law_profile(request: pytest.FixtureRequest) -> str:
    """The profile laws run under: --profile > $HYPOTHESIS_PROFILE (if ours) > dev."""
    return _profile_name(request.config)


@pytest.fixture(scope="session")
def law_seed(request: pytest.FixtureRequest) -> int | None:
    """--hypothesis-seed, if given (it overrides the profile's derandomization)."""
    seed = request.config.getoption("hypothesis_seed", default=None)
    return int(seed) if seed not in (None, "") else None


@pytest.fixture
def law_runner(impl: Any, law_profile: str, law_seed: int | None) -> Callable[..., Any]:
    """run(law_id, dtype, device) → LawResult; skips or fails the test from the result."""
    from properties.running import expectations  # the law library loads when a law is first run, not at startup
    from properties.running.runner import LAWS, run_law

    def run(law_id: str, dtype: Any, device: str = "cpu") -> Any:
        result = run_law(
            LAWS[law_id], impl, dtype=dtype, device=device, profile=law_profile, seed=law_seed, repro="pytest"
        )
        [result] = expectations.apply([result], impl, warn=False)  # the implementation's documented findings
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
