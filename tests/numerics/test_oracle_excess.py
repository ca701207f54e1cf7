"""The Block derivative oracle's excess (error beyond twice the baselines' error, in u at the result's scale) reaches
a law's JSON result, and bench/oracle_excess.py's summary of reports: the calibration of bounds.UNSEEN_ROUNDINGS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from properties.library.assertions import EXCESS
from properties.library.table import LAWS
from properties.numerics.bounds import UNSEEN_ROUNDINGS
from properties.running.loading import load
from properties.running.runner import run_law
from tests.common.bench import script


def _report(path: Path, *results: tuple[str, str, object]) -> None:
    rows = [{"law_id": law, "dtype": dt, "measurements": {} if x is None else {EXCESS: x}} for law, dt, x in results]
    path.write_text(json.dumps({"results": rows}))


def test_a_derivative_law_reports_the_reference_within_twice_the_baselines() -> None:
    """The reference is among its own baselines, so in fp32 its excess is below 0 (it errs no more than the worst)."""
    r = run_law(LAWS["Block.block_jacobian_is_identity_plus_branch"], load("nanolm_core"), dtype="fp32", profile="ci")
    assert r.status == "passed"
    excess = r.to_json()["measurements"][EXCESS]
    assert isinstance(excess, float) and excess <= 0


def test_the_summary_takes_the_largest_excess_per_law_and_dtype(tmp_path: Path, capsys) -> None:
    bench = script("oracle_excess")
    _report(tmp_path / "a-seed1.json", ("Block.block_x", "bf16", 0.5), ("Block.block_x", "fp32", -1.0))
    _report(tmp_path / "b-seed2.json", ("Block.block_x", "bf16", 0.9), ("RMSNorm.other", "fp32", None))
    assert bench.main([str(tmp_path), "--by-impl"]) == 0
    out = capsys.readouterr().out
    assert "3 results" in out and "b-seed2" in out and "largest excess 0.9·u" in out
    assert "a: largest excess -1·u" not in out and "a: largest excess 0.5·u" in out


def test_an_excess_reaching_the_allowance_fails_the_summary(tmp_path: Path) -> None:
    _report(tmp_path / "c-seed1.json", ("Block.block_x", "fp16", float(UNSEEN_ROUNDINGS)))
    assert script("oracle_excess").main([str(tmp_path)]) == 1


def test_no_measurement_or_a_missing_path_is_an_error(tmp_path: Path, capsys) -> None:
    _report(tmp_path / "d-seed1.json", ("RMSNorm.other", "fp32", None))
    assert script("oracle_excess").main([str(tmp_path)]) == 1
    with pytest.raises(SystemExit):
        script("oracle_excess").main([str(tmp_path / "missing.json")])
    assert "REPORT_OR_DIR" in capsys.readouterr().err
