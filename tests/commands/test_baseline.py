"""Regression baselines: record a run, compare a later one, report every error that grew (even inside the bound)."""

from __future__ import annotations

import json

import pytest

from properties.commands import baseline
from properties.running.runner import LawResult


def run(
    max_ulp: float | None = 0.5,
    p99_ulp: float | None = 0.25,
    status: str = "passed",
    law_id: str = "RMSNorm.rmsnorm_matches_golden",
    dtype: str = "bf16",
) -> list[LawResult]:
    return [
        LawResult(law_id, "RMSNorm", dtype, "cpu", status, max_ulp=max_ulp, p99_ulp=p99_ulp, examples=8),
        LawResult("RMSNorm.rmsnorm_does_not_center", "RMSNorm", dtype, "cpu", "passed", examples=8),
    ]


def test_record_writes_a_versioned_file_with_one_record_per_law_dtype_device(tmp_path):
    path = tmp_path / "sub" / "base.json"
    baseline.record(run(), path, impl="torch", profile="ci")
    doc = json.loads(path.read_text())
    assert doc["schema"] == baseline.SCHEMA and doc["impl"] == "torch" and doc["profile"] == "ci"
    assert doc["records"]["RMSNorm.rmsnorm_matches_golden[bf16-cpu]"] == {
        "status": "passed",
        "max_ulp": 0.5,
        "p99_ulp": 0.25,
        "headroom": None,
        "examples": 8,
    }
    assert doc["records"]["RMSNorm.rmsnorm_does_not_center[bf16-cpu]"]["max_ulp"] is None


def test_the_same_run_has_no_regressions(tmp_path):
    path = tmp_path / "b.json"
    baseline.record(run(), path)
    assert baseline.compare(run(), path) == []


def test_growth_inside_the_bound_is_reported_with_the_numbers(tmp_path):
    path = tmp_path / "b.json"
    baseline.record(run(max_ulp=0.5), path)
    assert baseline.compare(run(max_ulp=1.5), path) == [
        "RMSNorm.rmsnorm_matches_golden bf16 cpu: max ULP 0.50 → 1.50 (+1.00)"
    ]


def test_p99_growth_and_a_new_failure_are_regressions_improvements_are_not(tmp_path):
    path = tmp_path / "b.json"
    baseline.record(run(max_ulp=1.0, p99_ulp=0.5), path)
    assert baseline.compare(run(max_ulp=0.75, p99_ulp=0.5), path) == []
    kinds = {c.kind for c in baseline.changes(run(max_ulp=0.75), path)}
    assert "better" in kinds
    lines = baseline.compare(run(max_ulp=1.0, p99_ulp=0.75, status="failed"), path)
    assert lines == [
        "RMSNorm.rmsnorm_matches_golden bf16 cpu: passed → failed",
        "RMSNorm.rmsnorm_matches_golden bf16 cpu: p99 ULP 0.50 → 0.75 (+0.25)",
    ]


def test_an_infinite_error_is_a_regression(tmp_path):
    path = tmp_path / "b.json"
    baseline.record(run(max_ulp=0.5), path)
    [line] = baseline.compare(run(max_ulp=float("inf")), path)
    assert line.endswith("max ULP 0.50 → inf (+inf)")


def test_new_and_vanished_laws_are_changes_not_regressions(tmp_path):
    path = tmp_path / "b.json"
    baseline.record(run(), path)
    later = run(law_id="RMSNorm.rmsnorm_is_scale_invariant")
    kinds = sorted(c.kind for c in baseline.changes(later, path))
    assert kinds == ["gone", "new"]
    assert baseline.compare(later, path) == []


def test_json_report_records_are_accepted(tmp_path):
    path = tmp_path / "b.json"
    baseline.record([r.to_json() for r in run(max_ulp=float("inf"))], path)
    assert baseline.load(path)["records"]["RMSNorm.rmsnorm_matches_golden[bf16-cpu]"]["max_ulp"] == "inf"
    assert baseline.compare(run(max_ulp=float("inf")), path) == []


def test_a_different_profile_is_pointed_out(tmp_path):
    path = tmp_path / "b.json"
    baseline.record(run(), path, profile="ci")
    lines = baseline.compare(run(max_ulp=2.0), path, profile="dev")
    assert lines[0].startswith("note: baseline") and "'ci'" in lines[0] and len(lines) == 2


@pytest.mark.parametrize(("content", "message"), [("{", "invalid JSON"), ('{"schema": "other/1"}', "schema 'other/1'")])
def test_a_file_that_is_not_a_baseline_is_refused_with_a_hint(tmp_path, content, message):
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        baseline.compare(run(), path)


def test_a_grown_headroom_is_a_regression_even_without_a_ulp_measurement(tmp_path):
    path = tmp_path / "base.json"
    before = [LawResult("RMSNorm.rmsnorm_does_not_center", "RMSNorm", "fp32", "cpu", "passed", headroom=0.25)]
    after = [LawResult("RMSNorm.rmsnorm_does_not_center", "RMSNorm", "fp32", "cpu", "passed", headroom=0.75)]
    baseline.record(before, path, impl="torch", profile="ci")
    assert json.loads(path.read_text())["records"]["RMSNorm.rmsnorm_does_not_center[fp32-cpu]"]["headroom"] == 0.25
    assert baseline.compare(after, path) == ["RMSNorm.rmsnorm_does_not_center fp32 cpu: headroom 0.25 → 0.75 (+0.50)"]
    assert baseline.compare(before, path) == []
