"""Counterexample files: every failure of ``check`` writes one; ``nanolm-verify replay FILE`` re-runs exactly that
case through the law and prints the same failure (exit 1); nothing lands in the working directory unasked."""

from __future__ import annotations

import json
import os

import torch

from properties.entry.cli import main
from properties.running.runner import COUNTEREXAMPLE_FORMAT, load_counterexample

WRONG = "properties.gallery.eps_outside_sqrt"  # eps added after the square root: wrong where eps matters
LAW = "RMSNorm.rmsnorm_matches_golden"


def _check(tmp_path, capsys, *extra):
    out = tmp_path / "out" / "r.json"
    args = ["check", WRONG, "--only", LAW, "--dtype", "fp32", "--profile", "ci", "--workers", "1"]
    status = main([*args, "--json", str(out), *extra])
    text = capsys.readouterr().out
    return status, json.loads(out.read_text()), text


def test_a_failing_check_saves_a_counterexample_that_replays_to_the_same_failure(tmp_path, capsys):
    status, doc, text = _check(tmp_path, capsys)
    [record] = doc["results"]
    assert status == 1 and (record["status"], record["cause"]) == ("failed", "law")  # the law, not a crash
    path = record["counterexample"]
    assert path == str(tmp_path / "out" / "r-counterexamples" / f"{LAW}-fp32-cpu.pt")
    assert f"replay: nanolm-verify replay {path}" in text

    case = load_counterexample(path)  # a human's view: the tensors the implementation was given
    assert case["format"] == COUNTEREXAMPLE_FORMAT and case["law_id"] == LAW and case["implementation"] == WRONG
    [call] = case["calls"]
    assert call["component"] == "RMSNorm" and call["x"].dtype == torch.float32
    assert call["state"]["weight"].shape == call["x"].shape[-1:]
    assert [label for label, _ in case["draws"]] == ["protocol", "case"]  # the call protocol is drawn first

    assert main(["replay", path]) == 1
    replayed = capsys.readouterr().out
    first = record["message"].splitlines()[0]  # "y: ULP error … > bound … ULP (headroom …)": the same numbers
    flat = " ".join(replayed.split())
    assert f"FAIL {LAW} [fp32, cpu]: {first}" in flat and "cause: law" in flat
    worst = record["message"].splitlines()[1].split(",")[0].strip()  # "out of bound: k of n …; worst at (i, j) …"
    assert worst in flat


def test_a_replay_against_the_fixed_implementation_passes(tmp_path, capsys):
    _, doc, _ = _check(tmp_path, capsys)
    assert main(["replay", doc["results"][0]["counterexample"], "--impl", "nanolm_core"]) == 0
    assert "no longer fails" in capsys.readouterr().out


def test_artifacts_dir_is_used_and_nothing_is_written_to_the_cwd(tmp_path, capsys, monkeypatch):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    status, doc, _ = _check(tmp_path, capsys, "--artifacts", str(tmp_path / "cases"))
    assert status == 1 and os.listdir(work) == []
    assert doc["results"][0]["counterexample"] == str(tmp_path / "cases" / f"{LAW}-fp32-cpu.pt")
    args = ["check", WRONG, "--only", LAW, "--dtype", "fp32", "--profile", "ci", "--workers", "1"]
    assert main(args) == 1  # neither --json nor --artifacts: no file, and a hint
    assert "pass --artifacts DIR or --json PATH" in capsys.readouterr().out and os.listdir(work) == []


def test_replay_of_something_else_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "not.pt"
    torch.save({"format": "something else"}, bad)
    assert main(["replay", str(bad)]) == 2
    assert "expected 'nanolm-verify/counterexample/1'" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.pt")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_package_named_from_its_repository_is_recorded_by_name_and_replays(tmp_path, capsys, monkeypatch):
    """``check mypkg`` from the repository that holds the folder ``mypkg/``: the file names the module (not
    the folder's path, which is no implementation spec), and replay from that repository re-imports it."""
    repo = tmp_path / "repo"
    (repo / "mypkg").mkdir(parents=True)
    (repo / "mypkg" / "__init__.py").write_text(f"from {WRONG} import *  # noqa: F403\n")
    monkeypatch.chdir(repo)
    out = tmp_path / "out" / "r.json"
    args = ["check", "mypkg", "--only", LAW, "--dtype", "fp32", "--profile", "ci", "--workers", "1"]
    assert main([*args, "--json", str(out)]) == 1
    path = json.loads(out.read_text())["results"][0]["counterexample"]
    assert load_counterexample(path)["implementation"] == "mypkg"
    capsys.readouterr()
    assert main(["replay", path]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"FAIL {LAW} [fp32, cpu]: y: ULP error" in out and "cause: law" in out
