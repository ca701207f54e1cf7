"""Proof of power: every law catches a small wrong implementation (tests/wrong_impls) in the ci profile.

The number of examples each needed (``found_after``) is printed with ``-s`` / recorded in the test's
user properties (``--junitxml``).
"""

from __future__ import annotations

import pytest

from properties.running.loading import load
from properties.running.runner import LAWS, run_law
from tests.wrong_impls import CAUGHT_BY


def test_every_law_has_a_wrong_implementation():
    assert set(LAWS) <= {law for law, _ in CAUGHT_BY.values()}, "laws without a wrong implementation"


@pytest.mark.parametrize("name", sorted(CAUGHT_BY))
def test_wrong_implementation_is_caught(name, record_property):
    law_id, dtype = CAUGHT_BY[name]
    result = run_law(LAWS[law_id], load(f"tests.wrong_impls.{name}"), dtype=dtype, device="cpu", profile="ci")
    record_property("found_after", result.found_after)
    record_property("examples", result.examples)
    print(f"{name}: caught by {law_id} [{dtype}] after {result.found_after} example(s)")
    assert result.status == "failed", f"{name} not caught by {law_id}: {result.status} {result.message}"
    assert result.found_after is not None
    assert "reproduce:" in result.message


@pytest.mark.parametrize("name", sorted(CAUGHT_BY))
def test_wrong_implementation_passes_the_other_components(name):
    """Each wrong module defines only the component it breaks: the others are reported "not provided"."""
    impl = load(f"tests.wrong_impls.{name}")
    assert impl.provided == (LAWS[CAUGHT_BY[name][0]].component,)
