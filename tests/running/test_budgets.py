"""Profiles bound their time: a law that holds stops searching at the profile's search budget and passes with the
examples it ran (saying so); a failing law still fails within the budget."""

from __future__ import annotations

import dataclasses

import pytest

from properties.library.laws import LAWS
from properties.running import profiles
from properties.running.loading import load
from properties.running.runner import run_law

LAW = "RMSNorm.rmsnorm_matches_golden"


@pytest.fixture
def tiny_budget(monkeypatch):
    """A dev-like profile with 10,000 examples but a 0.5 s search budget."""
    prof = dataclasses.replace(profiles.PROFILES["dev"], name="budgeted", max_examples=10_000, search_budget=0.5)
    monkeypatch.setitem(profiles.PROFILES, "budgeted", prof)
    return "budgeted"


def test_a_holding_law_stops_at_the_search_budget_and_passes(tiny_budget):
    result = run_law(LAWS[LAW], load("nanolm_core"), dtype="fp32", profile=tiny_budget, seed=1)
    assert result.status == "passed", result.message
    assert 1 <= result.examples < 10_000  # stopped by the budget, not by max_examples (its time: no verdict here)
    assert result.measurements["search"] == (
        f"stopped after {result.examples} examples by the 0.5 s search budget of profile budgeted"
    )


def test_a_failing_law_is_still_caught_under_the_budget(tiny_budget):
    result = run_law(LAWS[LAW], load("properties.gallery.eps_outside_sqrt"), dtype="fp32", profile=tiny_budget, seed=1)
    assert result.status == "failed" and result.cause == "law", result.message
    assert "search" not in result.measurements


def test_every_profile_states_its_budgets():
    for prof in profiles.PROFILES.values():
        assert prof.timeout > 0 and prof.shrink_budget > 0
        assert prof.search_budget is None or 0 < prof.search_budget < prof.timeout
    assert profiles.get("thorough").search_budget is not None  # the profile whose max_examples alone is unbounded
