"""``check --expectations FILE`` and ``compare --expectations FILE``: a user's file turns a documented failure into
xfail (exit 0), a line naming no law into a warning, and a bad file into a usage error (exit 2)."""

from __future__ import annotations

import json

from properties.entry.cli import main

WRONG = "properties.gallery.eps_outside_sqrt"
ONE = ["--profile", "ci", "--only", "rmsnorm_matches_golden", "--dtype", "fp32", "-q", "--workers", "1"]


def test_check_with_a_user_file_xfails_the_documented_failure_and_warns_about_a_stale_line(tmp_path, capsys):
    assert main(["check", WRONG, *ONE]) == 1
    capsys.readouterr()
    mine = tmp_path / "mine.txt"
    mine.write_text(
        "RMSNorm.rmsnorm_matches_golden[fp32]  xfail  eps outside the square root, on purpose\n"
        "RMSNorm.renamed_law                   xfail  left over from an old version\n"
    )
    report = tmp_path / "report.json"
    assert main(["check", WRONG, *ONE, "--expectations", str(mine), "--json", str(report)]) == 0
    out = capsys.readouterr()
    assert "1 xfailed" in out.out
    assert f"{mine}:2: expectation RMSNorm.renamed_law[*-*] matches no known law id" in out.err
    [record] = json.loads(report.read_text())["results"]
    assert record["status"] == "xfailed" and record["max_ulp"] > 1e6  # the measurement is kept


def test_check_refuses_a_missing_or_malformed_user_file(tmp_path, capsys):
    assert main(["check", WRONG, *ONE, "--expectations", str(tmp_path / "absent.txt")]) == 2
    bad = tmp_path / "bad.txt"
    bad.write_text("RMSNorm.rmsnorm_matches_golden  maybe  why\n")
    assert main(["check", WRONG, *ONE, "--expectations", str(bad)]) == 2
    assert "unknown action 'maybe'" in capsys.readouterr().err


def test_compare_applies_a_user_file(tmp_path, capsys):
    mine = tmp_path / "mine.txt"
    mine.write_text("RMSNorm.rmsnorm_matches_golden[fp32]  xfail  on purpose\n")
    out = tmp_path / "out"
    args = [
        "compare",
        WRONG,
        "--out",
        str(out),
        "--only",
        "RMSNorm.rmsnorm_matches_golden",
        "--dtype",
        "fp32",
        "--profile",
        "ci",
    ]
    assert main([*args, "--expectations", str(mine)]) == 0
    [record] = json.loads((out / "results.json").read_text())["results"][WRONG]
    assert record["status"] == "xfailed"
