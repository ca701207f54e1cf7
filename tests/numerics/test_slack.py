"""headroom_median (the typical example's headroom, 1/slack) and bench/slack.py's selection of the oracle laws."""

from __future__ import annotations

import pytest

from properties.library.context import Recorder
from properties.library.table import LAWS
from properties.running.loading import load
from properties.running.runner import run_law
from tests.common.bench import script


def test_the_median_is_over_examples_each_the_max_of_its_comparisons() -> None:
    rec = Recorder()
    for comparisons in ([0.1, 0.4], [0.2], [], [0.9, 0.3]):  # an example may compare nothing (not counted)
        rec.begin_example()
        for h in comparisons:
            if rec.example_headroom is None or h > rec.example_headroom:
                rec.example_headroom = h
    assert rec.headroom_median == pytest.approx(0.4)  # median of 0.4, 0.2, 0.9
    assert rec.headrooms == [0.4, 0.2, 0.9]


def test_a_golden_law_reports_its_median_headroom_at_most_its_max() -> None:
    r = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], load("nanolm_core"), dtype="fp32", profile="ci")
    assert r.status == "passed" and r.headroom_median is not None
    assert 0 <= r.headroom_median <= r.headroom <= 1
    assert r.to_json()["headroom_median"] == r.headroom_median


def test_a_stored_law_counts_each_case_as_an_example() -> None:
    r = run_law(LAWS["RMSNorm.rmsnorm_matches_stored_golden"], load("nanolm_core"), dtype="bf16", profile="ci")
    assert r.status == "passed" and r.examples > 1 and r.headroom_median is not None


def test_bench_slack_selects_every_oracle_law_and_no_invariant() -> None:
    slack = script("slack")
    chosen = {law for law in LAWS if slack.ORACLE_LAWS.search(law)}
    for law in (
        "RMSNorm.rmsnorm_matches_golden",
        "SwiGLU.swiglu_matches_stored_golden",
        "Block.block_parameter_gradients_match_fp64",
        "Block.block_jacobian_is_identity_plus_branch",
        "Block.block_follows_its_module_lifecycle",
    ):
        assert law in chosen
    for law in ("RMSNorm.rmsnorm_is_scale_invariant", "SwiGLU.swiglu_bf16_drift_from_fp32_is_bounded"):
        assert law not in chosen
    rows = slack.rows(
        [
            {"law_id": "RMSNorm.rmsnorm_matches_golden", "dtype": "fp32", "status": "passed", "headroom": 0.5,
             "headroom_median": 0.25},
            {"law_id": "RMSNorm.rmsnorm_is_scale_invariant", "dtype": "fp32", "status": "passed", "headroom": 1.0},
        ]
    )  # fmt: skip
    assert rows == [("RMSNorm.rmsnorm_matches_golden", "fp32", 0.25, 0.5, "passed")]
