"""pytest plugin (entry point ``nanolm_verify``): ``--impl`` selects the implementation under test.

Fixtures: ``impl`` (the loaded properties.impl.Implementation).
"""

from __future__ import annotations

import pytest

from properties.impl import ENV_VAR, ImplementationError, load, resolve_spec


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nanolm-verify")
    group.addoption(
        "--impl",
        default=None,
        help=f"implementation to check (module, .py path or adapter id); overrides ${ENV_VAR}; default nanolm_core",
    )


@pytest.fixture(scope="session")
def impl(request: pytest.FixtureRequest):
    """The implementation under test (CLI --impl > $NANOLM_IMPL > nanolm_core)."""
    spec = resolve_spec(option=request.config.getoption("--impl"))
    try:
        return load(spec)
    except ImplementationError as exc:
        pytest.exit(f"nanolm-verify: {exc}", returncode=2)
