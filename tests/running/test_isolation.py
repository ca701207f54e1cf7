"""The subject cannot subvert the verdict in any command that runs it (check, compare, pitfalls): each hostile
implementation in tests/hostile/ ends with the right exit status, a complete table or report and the right cause,
in bounded time (the subject runs in worker processes started by the run session; properties.running.session)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from properties.entry.cli import main
from properties.gallery import PITFALLS, Pitfall

HOSTILE = Path(__file__).parents[1] / "hostile"
ONE_LAW = ["--profile", "ci", "--dtype", "fp32", "--only", "rmsnorm_matches_golden,swiglu_matches_golden", "-q"]

# module → (the cause of the failed result, a fragment of its message)
CASES = {
    "exits_in_forward": ("crash", "SystemExit"),
    "os_exit_in_forward": ("crash", "worker process running the implementation exited with status 0"),
    "raises_system_exit": ("crash", "SystemExit"),
    "skips_in_forward": ("crash", "Skipped"),
    "segfaults": ("crash", "killed by SIGSEGV"),
    "changes_threads_in_forward": ("contract", "changed torch's global state: torch threads"),
    "rebinds_exit_status": ("law", "out of bound"),
}
COMMANDS = ("check", "compare", "pitfalls")  # every command that runs a subject


def _check(tmp_path: Path, module: str, *extra: str) -> tuple[int, dict]:
    report = tmp_path / "r.json"
    status = main(["check", str(HOSTILE / f"{module}.py"), *ONE_LAW, "--json", str(report), *extra])
    return status, json.loads(report.read_text())


def _run(command: str, module: str, tmp_path: Path, monkeypatch: Any, capsys: Any, *extra: str) -> tuple[int, list]:
    """Run ``command`` on the hostile module → (exit status, its failed law records as (cause, message))."""
    path = str(HOSTILE / f"{module}.py")
    if command == "check":
        status, doc = _check(tmp_path, module, *extra)
        records = doc["results"]
    elif command == "compare":  # beside the reference: the failure must be the hostile module's alone
        status = main(["compare", "nanolm_core", path, *ONE_LAW, "--workers", "1", "--out", str(tmp_path), *extra])
        doc = json.loads((tmp_path / "results.json").read_text())
        assert {r["status"] for r in doc["results"]["nanolm_core"]} == {"passed"}
        failures = (tmp_path / "report.md").read_text().partition("## Failures and expected failures")[2]
        assert f"**{path}**" in failures and "**nanolm_core**" not in failures and (tmp_path / "index.html").exists()
        records = doc["results"][path]
    else:  # pitfalls: the module as a catalogue entry its law must catch; the verdict and the message, as printed
        law = (
            "SwiGLU.swiglu_matches_golden"
            if "class SwiGLU" in Path(path).read_text()
            else "RMSNorm.rmsnorm_matches_golden"
        )
        monkeypatch.setitem(PITFALLS, module, Pitfall(path, law, "fp32", "test-only", "-"))
        status = main(["pitfalls", module, "--profile", "ci", "--workers", "1", *extra])
        out = capsys.readouterr().out
        print(out)  # for the caller's capsys
        text = " ".join(out.split())
        caught = re.search(r"✔ CAUGHT|returned failed \(cause (\w+)\)", text)
        return status, [("law" if caught[0].startswith("✔") else caught[1], text)] if caught else []
    return status, [(r["cause"], r["message"]) for r in records if r["status"] == "failed"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("module", sorted(CASES))
def test_a_hostile_forward_ends_in_a_failed_result_with_its_cause(command, module, tmp_path, monkeypatch, capsys):
    want_cause, fragment = CASES[module]
    status, failed = _run(command, module, tmp_path, monkeypatch, capsys)
    out = capsys.readouterr().out
    [(cause, message)] = failed
    assert cause == want_cause and fragment in message, message
    if command == "pitfalls":  # caught only by the law's own assertion: a crash or contract failure is a miss
        assert status == (0 if cause == "law" else 1), out
    else:
        assert status == 1, out
        assert ("\nlaw " in out and "FAIL" in out) if command == "check" else ("wrote " in out)  # the table, the files


@pytest.mark.parametrize("command", COMMANDS)
def test_a_hanging_forward_is_a_timeout_within_the_limit(command, tmp_path, monkeypatch, capsys):
    """The hang ends at the per-law limit (its message names it); how long the whole run took is no verdict here —
    a loaded machine may start the workers slowly. 15 s: the reference beside it (compare) must finish its laws
    within the limit on a loaded machine too."""
    status, failed = _run(command, "hangs", tmp_path, monkeypatch, capsys, "--timeout", "15")
    assert status == 1
    [(cause, message)] = failed
    assert cause == "timeout" and "no verdict within 15 s (the per-law time limit" in message


@pytest.mark.parametrize("command", COMMANDS)
def test_a_runaway_allocation_is_a_crash_not_the_machine_s_oom(command, tmp_path, monkeypatch, capsys):
    status, failed = _run(command, "allocates_forever", tmp_path, monkeypatch, capsys, "--memory-limit", "4")
    assert status == 1
    [(cause, message)] = failed
    assert cause == "crash" and "memory" in message.lower(), message


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


# ---------------------------------------------------------------------------------------------- every command

USER_COMMANDS = {  # the commands that take the implementation from the user: argv (module path as {m})
    "check": ["check", "{m}", *ONE_LAW],
    "compare": ["compare", "nanolm_core", "{m}", *ONE_LAW, "--workers", "1", "--out", "{out}"],
}


@pytest.mark.parametrize("command", sorted(USER_COMMANDS))
@pytest.mark.parametrize("module", ["exits_at_import", "os_exit_at_import"])
def test_a_module_exiting_at_import_is_one_line_usage_error_in_every_command(command, module, tmp_path, capsys):
    argv = [a.format(m=HOSTILE / f"{module}.py", out=tmp_path / "out") for a in USER_COMMANDS[command]]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"{module}.py" in err and ("SystemExit" in err or "exited with status 3" in err), err
    assert "\nlaw " not in out and not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_compare_writes_its_report_with_the_crash_attributed_to_the_module_that_exited(tmp_path, capsys):
    argv = [a.format(m=HOSTILE / "os_exit_in_forward.py", out=tmp_path / "out") for a in USER_COMMANDS["compare"]]
    assert main(argv) == 1
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    reference, hostile = doc["results"].values()
    assert {r["status"] for r in reference} == {"passed"}
    crashed = [r for r in hostile if r["status"] == "failed"]
    assert crashed and {r["cause"] for r in crashed} == {"crash"} and {r["component"] for r in crashed} == {"RMSNorm"}
    assert "exited with status 0" in crashed[0]["message"]
    assert "**CRASH**" in (tmp_path / "out" / "report.md").read_text()
    assert "CRASH" in (tmp_path / "out" / "index.html").read_text()


@pytest.mark.parametrize("module", ["exits_at_import", "os_exit_at_import"])
def test_a_catalogue_entry_exiting_at_import_is_a_miss_not_the_end(module, tmp_path, monkeypatch, capsys):
    status, failed = _run("pitfalls", module, tmp_path, monkeypatch, capsys)
    assert status == 1 and [cause for cause, _ in failed] == ["crash"]
    assert "NOT CAUGHT" in capsys.readouterr().out and "Summary" in failed[0][1]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_verifier_never_imports_the_implementation(command, tmp_path, monkeypatch, capsys):
    name = "tests.impls.rms_only"
    monkeypatch.delitem(sys.modules, name, raising=False)
    argv = {
        "check": ["check", name, *ONE_LAW],
        "compare": ["compare", "nanolm_core", name, *ONE_LAW, "--workers", "1", "--out", str(tmp_path)],
        "pitfalls": ["pitfalls", "rms_only", "--profile", "ci", "--workers", "1"],
    }[command]
    monkeypatch.setitem(PITFALLS, "rms_only", Pitfall(name, "RMSNorm.rmsnorm_matches_golden", "fp32", "test-only", "-"))
    assert main(argv) in (0, 1)
    assert name not in sys.modules  # its workers imported it; this process did not (not even to pre-check it)


# ---------------------------------------------------------------------------------------- the judge out of reach

# Hostile subjects, each the wrong RMSNorm (output × 1.05: 7.7·10⁵ ULP against a bound of 8.7) and one attack on a
# verifier that would judge in its process → the cause of the failure every command must report.
OUT_OF_REACH = {
    "wrong_by_five_percent": "law",  # the plain wrong subject: the attacks below must not change its verdict
    "patches_the_suite": "law",  # Task.run, fail, the assertions, golden.rmsnorm, torch.equal patched at import
    "returns_a_lying_subclass": "contract",  # a Tensor subclass whose .to/.double/.clone show the right values
    "forges_a_passed_result": "crash",  # a pickled "passed" LawResult and a JSON "passed" on every pipe, on stdout
    "sends_a_pickle": "crash",  # a pickle whose unpickling would os._exit(0) the verifier
    "sends_an_int": "crash",  # a malformed message: 5
    "leaves_an_orphan": "law",  # a background process in a session of its own, outliving the run
}
ONE_RMSNORM_LAW = ["--profile", "ci", "--dtype", "fp32", "--only", "rmsnorm_matches_golden", "-q"]
NODE = "test_law[RMSNorm.rmsnorm_matches_golden-fp32-cpu]"


@pytest.fixture
def orphans(tmp_path, monkeypatch):
    """Where leaves_an_orphan writes the pids of the processes it leaves behind; they are ended after the test."""
    pids = tmp_path / "pids"
    monkeypatch.setenv("NANOLM_HOSTILE_PIDS", str(pids))
    yield pids
    for pid in pids.read_text().split() if pids.exists() else []:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def _hostile(module: str) -> str:
    return str(HOSTILE / f"{module}.py")


def _failed_causes(records: list[dict]) -> list[str]:
    return [r["cause"] for r in records if r["status"] == "failed"]


@pytest.mark.parametrize("module", sorted(OUT_OF_REACH))
def test_a_hostile_subject_fails_check_with_its_cause(module, tmp_path, orphans, capsys):
    status = main(["check", _hostile(module), *ONE_RMSNORM_LAW, "--json", str(tmp_path / "r.json")])
    records = json.loads((tmp_path / "r.json").read_text())["results"]
    assert status == 1 and _failed_causes(records) == [OUT_OF_REACH[module]], records
    assert "0 failed" not in capsys.readouterr().out


@pytest.mark.parametrize("module", sorted(OUT_OF_REACH))
def test_a_hostile_subject_fails_compare_with_its_cause(module, tmp_path, orphans, capsys):
    out = tmp_path / "out"
    status = main(["compare", "nanolm_core", _hostile(module), *ONE_RMSNORM_LAW, "--workers", "1", "--out", str(out)])
    doc = json.loads((out / "results.json").read_text())
    assert status == 1 and {r["status"] for r in doc["results"]["nanolm_core"]} == {"passed"}
    assert _failed_causes(doc["results"][_hostile(module)]) == [OUT_OF_REACH[module]]


@pytest.mark.parametrize("module", sorted(OUT_OF_REACH))
def test_a_hostile_subject_fails_replay_with_its_cause(module, tmp_path, orphans, capsys):
    assert main(["check", _hostile(module), *ONE_RMSNORM_LAW, "--json", str(tmp_path / "r.json")]) == 1
    [case] = (tmp_path / "r-counterexamples").iterdir()
    capsys.readouterr()
    assert main(["replay", str(case)]) == 1
    assert f"cause: {OUT_OF_REACH[module]}" in capsys.readouterr().out


@pytest.mark.parametrize("module", sorted(OUT_OF_REACH))
def test_a_hostile_subject_fails_the_pytest_plugin_with_its_cause(module, tmp_path, orphans):
    """The plugin judges in the pytest process and runs the subject in a process of its own: none of the attacks
    reaches pytest's outcome. Run as a user would, in a process of its own, which must end (no orphan holds its
    output)."""
    import properties.conformance

    laws = Path(properties.conformance.__file__).parent / "test_laws.py"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", f"{laws}::{NODE}"]
    cmd += ["--impl", _hostile(module), "--nanolm-profile", "ci"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[2])
    assert proc.returncode == 1 and f"cause: {OUT_OF_REACH[module]}" in proc.stdout, proc.stdout + proc.stderr


def test_an_orphan_of_the_subject_does_not_hold_the_caller_s_output(tmp_path, orphans):
    """check ends with its verdict though the subject left a process behind: that process holds none of the
    caller's pipes (the subject's output goes to its log)."""
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", _hostile("leaves_an_orphan"), *ONE_RMSNORM_LAW]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)  # the orphan sleeps 60 s: communicate would wait for it
    assert proc.returncode == 1 and "FAIL" in out, out + err
