"""``nanolm-verify fuzz``: a short HypoFuzz campaign stores what it explores in the shared database, and the report
replays the database through the laws in isolated workers."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from properties.commands import fuzz

pytest.importorskip("hypofuzz", reason="the fuzz extra (HypoFuzz) is not installed")


def test_a_short_campaign_fills_the_database_and_reports_the_counterexample(tmp_path):
    """A campaign budgeted in examples ends at the law's failure once HypoFuzz has stored it — the same campaign on
    a slow machine as on a fast one —, and the report replays the database through the law."""
    db, report, work = tmp_path / "db", tmp_path / "r.json", tmp_path / "work"
    work.mkdir()
    cmd = [sys.executable, "-m", "properties.entry.cli", "fuzz", "properties.gallery.mean_subtraction"]
    cmd += ["--examples", "1000", "--workers", "1", "--only", "rmsnorm_does_not_center", "--dtype", "fp32"]
    cmd += ["--database", str(db), "--json", str(report)]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=900)  # a safety net, not a budget
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the fuzzer stopped early" not in proc.stderr, proc.stderr
    [examples] = re.findall(r"campaign over after (\d+) examples", proc.stdout)
    assert 1 <= int(examples) < 1000, proc.stdout  # it ended at the failure, not at the budget
    assert any(p.is_file() for p in db.rglob("*")), "the campaign stored nothing"
    [result] = json.loads(report.read_text())["results"]
    assert (result["status"], result["cause"]) == ("failed", "law")
    assert list(work.iterdir()) == [], "files left in the working directory"


@pytest.mark.parametrize(
    ("processes", "reached"),
    [
        ([{"A[fp32]": [0, 0], "B[fp32]": [0, 0]}], False),  # collected, nothing run yet
        ([{"A[fp32]": [30, 0], "B[fp32]": [29, 0]}], False),
        ([{"A[fp32]": [30, 0], "B[fp32]": [12, 0]}, {"B[fp32]": [18, 0]}], True),  # summed over processes
        ([{"A[fp32]": [3, 1], "B[fp32]": [30, 0]}], True),  # A failed (or skipped): finished
        ([], False),  # no process has collected the laws yet
    ],
)
def test_the_example_budget_counts_every_law_over_every_process(tmp_path, processes, reached):
    """``--examples 30``: every law × dtype ran 30 examples in all processes together, or finished."""
    for pid, counts in enumerate(processes):
        (tmp_path / f"{pid}.json").write_text(json.dumps(counts))
    (tmp_path / "99.tmp").write_text("{")  # a tally being written is never read
    assert fuzz._reached(tmp_path, 30) is reached


def test_fuzz_refuses_bad_arguments_before_work(capsys):
    from properties.entry.cli import main

    assert main(["fuzz", "--minutes", "0"]) == 2
    assert "--minutes 0" in capsys.readouterr().err
    assert main(["fuzz", "--examples", "0"]) == 2
    assert "--examples 0" in capsys.readouterr().err
