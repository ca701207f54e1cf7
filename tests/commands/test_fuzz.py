"""``nanolm-verify fuzz``: a short HypoFuzz campaign stores what it explores in the shared database, and the report
replays the database through the laws in isolated workers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("hypofuzz", reason="the fuzz extra (HypoFuzz) is not installed")


def test_a_short_campaign_fills_the_database_and_reports_the_counterexample(tmp_path):
    db, report, work = tmp_path / "db", tmp_path / "r.json", tmp_path / "work"
    work.mkdir()
    cmd = [sys.executable, "-m", "properties.entry.cli", "fuzz", "properties.gallery.mean_subtraction"]
    cmd += ["--minutes", "0.3", "--workers", "1", "--only", "rmsnorm_does_not_center", "--dtype", "fp32"]
    cmd += ["--database", str(db), "--json", str(report)]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the fuzzer stopped early" not in proc.stderr, proc.stderr
    assert any(p.is_file() for p in db.rglob("*")), "the campaign stored nothing"
    [result] = json.loads(report.read_text())["results"]
    assert (result["status"], result["cause"]) == ("failed", "law")
    assert list(work.iterdir()) == [], "files left in the working directory"


def test_fuzz_refuses_bad_arguments_before_work(capsys):
    from properties.entry.cli import main

    assert main(["fuzz", "--minutes", "0"]) == 2
    assert "--minutes 0" in capsys.readouterr().err
