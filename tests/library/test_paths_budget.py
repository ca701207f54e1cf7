"""The code-path-size laws' time per case (laws/paths.py): cases in ascending rows, each timed; a case estimated
over the profile's ``case_budget`` is left unjudged and named, never judged otherwise.

The clock is the test's: the mechanism is shown on the costs an interpreted Triton kernel has (a program per row,
milliseconds each) and those an eager one has (a fixed cost per call, microseconds per row), not on this
machine's speed."""

from __future__ import annotations

import itertools
import types

import pytest
import torch

from properties.library import components
from properties.library.context import LawContext, open_context
from properties.library.laws import paths
from properties.running import profiles


def test_the_estimate_is_affine_in_rows_from_the_smallest_case_at_the_least_cost_per_row():
    costs = paths.Costs([(5, 0.1), (4099, 4.2), (5, 0.2)])
    assert costs.estimate(65_537) == pytest.approx(0.1 + (4.1 / 4094) * 65_532)  # slope past the fixed 0.1 s
    assert paths.Costs([(4099, 4.0)]).estimate(8198) == pytest.approx(8.0)  # one row count: proportional
    assert paths.Costs([(4099, 0.0), (5, 1.0)]).estimate(65_537) == 1.0  # a faster large case: no negative slope
    two = paths.Costs([(5, 0.1), (4099, 42.0), (4099, 1.7)])  # a kernel packing more narrow rows per program
    assert two.estimate(65_537) == pytest.approx(0.1 + (1.6 / 4094) * 65_532)  # the cheaper row: the narrow cases


def test_no_estimate_without_a_case_of_a_sixty_fourth_of_the_rows():
    assert paths.Costs().estimate(5) is None
    assert paths.Costs([(5, 0.1)]).estimate(4099) is None  # 5 rows say nothing of 4,099: the case runs
    assert paths.Costs([(4099, 1.0)]).estimate(4099 * paths.RAMP) is not None
    assert paths.Costs([(4099, 1.0)]).estimate(4099 * paths.RAMP + 1) is None


def test_every_large_case_has_a_case_to_be_estimated_from():
    """The data the estimate needs: past the small cases, each case of a component has one of ≥ 1/RAMP of its rows
    before it — so no size is run blind under a budget (AddRMSNorm's 4,099 rows sit between 5 and 2^16 + 1)."""
    for rec in components.RECORDS.values():
        if rec.paths is None:
            continue
        component, rows = rec.name, sorted(paths._n_rows(b(torch.float32)) for b in rec.paths().values())
        for before, n in itertools.pairwise(rows):
            assert n <= 4099 or before * paths.RAMP >= n, (component, before, n)


def _run_cases(monkeypatch, component: str, budget: float | None, seconds) -> tuple[list[str], dict]:
    """The cases ``_cases`` hands the law under a context with ``budget``, each "taking" ``seconds(rows)`` on the
    test's clock; → (the names judged, the context's measurements)."""
    clock = [0.0]
    monkeypatch.setattr(paths, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))  # paths' clock only
    ctx = LawContext("law", component, torch.float32, "cpu", "ci", False, 0, "reproduce", case_budget=budget)
    judged = []
    with open_context(ctx):
        for case in paths._cases(components.record(component), torch.float32):
            judged.append(case.name)
            clock[0] += seconds(paths._n_rows(case))
    assert ctx.recorder.examples == len(judged)
    return judged, ctx.recorder.measurements


def test_an_interpreted_kernels_grid_sized_cases_are_left_and_named(monkeypatch):
    names = {
        paths._n_rows(b(torch.float32)): b(torch.float32).name for b in components.record("RMSNorm").paths().values()
    }
    judged, measured = _run_cases(monkeypatch, "RMSNorm", 60.0, lambda rows: 0.01 + 0.0019 * rows)
    assert [paths._n_rows(c) for c in map(_by_name("RMSNorm"), judged)] == [5, 5, 5, 5, 4099, 4099]  # ascending
    left = measured["sizes left"]
    assert [x["case"] for x in left] == [names[2**16 + 1], names[2**17 + 3]]
    assert all(x["estimated s"] > 60.0 and x["budget s"] == 60.0 for x in left)
    assert left[0]["estimated s"] == pytest.approx(0.0195 + 0.0019 * (2**16 + 1 - 5), rel=1e-2)
    assert set(measured["case seconds"]) == set(judged)


def test_an_eager_kernel_runs_every_size_and_no_budget_runs_every_size(monkeypatch):
    every = len(components.record("RMSNorm").paths())
    judged, measured = _run_cases(monkeypatch, "RMSNorm", 60.0, lambda rows: 0.05 + 2e-6 * rows)
    assert len(judged) == every and "sizes left" not in measured
    judged, measured = _run_cases(monkeypatch, "RMSNorm", None, lambda rows: 0.01 + 0.0019 * rows)
    assert len(judged) == every and "sizes left" not in measured


def test_ci_has_a_case_budget_and_the_longer_profiles_none():
    assert profiles.get("ci").case_budget is not None
    assert profiles.get("dev").case_budget is None and profiles.get("thorough").case_budget is None


def _by_name(component: str):
    cases = {c.name: c for c in (b(torch.float32) for b in components.record(component).paths().values())}
    return cases.__getitem__


def test_the_sizes_left_are_in_the_checks_footer():
    from properties.commands.render.text import check_footer
    from properties.running.runner import LawResult

    law = "RMSNorm.rmsnorm_matches_golden_at_code_path_sizes"
    left = [{"case": "2^16 + 1 rows, D = 8", "estimated s": 125.0, "budget s": 60.0}]
    results = [
        LawResult(law, "RMSNorm", dt, "cpu", "passed", measurements={"sizes left": left}) for dt in ("fp32", "bf16")
    ]
    footer = " ".join(check_footer(results, planned=2, interrupted=None, brief=False, saved="").split())
    assert f"sizes: {law} [fp32, bf16] left 2^16 + 1 rows, D = 8 (est. 125 s)" in footer
    assert "over 60 s per case in profile ci; --profile dev judges them" in footer
