"""The subject cannot subvert the verdict: each hostile implementation in tests/hostile/ ends with the right exit
status, a complete table, a valid JSON report and the right cause, in bounded time (the subject runs in worker
processes; properties.running.workers)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from properties.entry.cli import main

HOSTILE = Path(__file__).parents[1] / "hostile"
ONE_LAW = ["--profile", "ci", "--dtype", "fp32", "--only", "rmsnorm_matches_golden,swiglu_matches_golden", "-q"]

# module → (exit status, the cause of the failed result, a fragment of the message's first line)
CASES = {
    "exits_in_forward": (1, "crash", "SystemExit"),
    "os_exit_in_forward": (1, "crash", "worker process running the implementation exited with status 0"),
    "raises_system_exit": (1, "crash", "SystemExit"),
    "skips_in_forward": (1, "crash", "Skipped"),
    "segfaults": (1, "crash", "killed by SIGSEGV"),
    "changes_threads_in_forward": (1, "contract", "changed torch's global state: torch threads"),
    "rebinds_exit_status": (1, "law", "ULP error"),
}


def _check(tmp_path: Path, module: str, *extra: str) -> tuple[int, dict]:
    report = tmp_path / "r.json"
    status = main(["check", str(HOSTILE / f"{module}.py"), *ONE_LAW, "--json", str(report), *extra])
    return status, json.loads(report.read_text())


@pytest.mark.parametrize("module", sorted(CASES))
def test_a_hostile_forward_ends_in_a_failed_result_with_its_cause(module, tmp_path, capsys):
    want_status, want_cause, fragment = CASES[module]
    status, doc = _check(tmp_path, module)
    out = capsys.readouterr().out
    assert status == want_status, out
    [failed] = [r for r in doc["results"] if r["status"] == "failed"]
    assert failed["cause"] == want_cause, failed["message"]
    assert fragment in failed["message"].splitlines()[0] or fragment in failed["message"], failed["message"]
    assert "\nlaw " in out and "FAIL" in out  # the table was printed


def test_a_hanging_forward_is_a_timeout_within_the_limit(tmp_path, capsys):
    """The hang ends at the per-law limit (its message names it); how long the whole run took is no verdict here —
    a loaded machine may start the workers slowly."""
    status, doc = _check(tmp_path, "hangs", "--timeout", "3")
    assert status == 1
    [failed] = [r for r in doc["results"] if r["status"] == "failed"]
    assert failed["cause"] == "timeout" and failed["message"].startswith("no verdict within 3 s")


def test_a_runaway_allocation_is_a_crash_not_the_machine_s_oom(tmp_path, capsys):
    status, doc = _check(tmp_path, "allocates_forever", "--memory-limit", "4")
    assert status == 1
    [failed] = [r for r in doc["results"] if r["status"] == "failed"]
    assert failed["cause"] == "crash" and "memory" in failed["message"].lower(), failed["message"]


@pytest.mark.parametrize(
    ("module", "setting"),
    [("flushes_denormals_at_import", "flush-denormal False → True"), ("disables_grad_at_import", "grad mode")],
)
def test_global_state_changed_at_import_is_reported_against_the_module_only(module, setting, tmp_path, capsys):
    status, doc = _check(tmp_path, module, "--only", "Module,RMSNorm,SwiGLU")
    assert status == 1
    failed = [r for r in doc["results"] if r["status"] == "failed"]
    assert [r["law_id"] for r in failed] == ["Module.module_import_leaves_torch_state_unchanged"]
    assert setting in failed[0]["message"]


def test_printing_garbage_does_not_reach_the_verdict(tmp_path, capsys):
    status, _ = _check(tmp_path, "prints_garbage")
    out, err = capsys.readouterr()
    assert status == 0 and "more garbage" not in out + err and "\x1b[2J" not in out + err


def test_exiting_at_import_is_a_usage_error_that_leaves_no_temporary_files(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the run's temporary directory goes
    assert main(["check", str(HOSTILE / "exits_at_import.py"), *ONE_LAW]) == 2
    assert "SystemExit" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # the workers' logs went with the failed start


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_still_writes_the_table_and_a_partial_report(signum, tmp_path):
    report = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", "--profile", "ci", "--json", str(report)]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "checking nanolm_core" in proc.stdout.readline()  # the worker has loaded the implementation
    for line in proc.stderr:  # off a terminal: one line per finished law — wait for the first, however long it takes
        if line.startswith("[1/"):
            break
    proc.send_signal(signum)  # one law has finished, most have not
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert "\nlaw " in "\n" + out and f"interrupted by {signal.Signals(signum).name}" in out
    doc = json.loads(report.read_text())
    assert doc["interrupted"] is True and doc["summary"]["total"] == len(doc["results"])
    assert not [p for p in tmp_path.iterdir() if p.name != "r.json"], "files left in the working directory"


def test_nothing_is_written_to_the_working_directory(tmp_path):
    env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": ""}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY")
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", "--profile", "ci", "--only", "RMSNorm", "-q"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(tmp_path.iterdir()) == []
