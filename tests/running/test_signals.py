"""Signals and process hygiene, end to end (``nanolm-verify check`` in a subprocess, with hostile subjects from
tests/hostile/): an interrupt at any phase ends the run with 128 + the signal and a partial report; every process
the subject started ends with the run; nothing of ours outlives it holding the caller's output (the caller reads
stdout and stderr to their end, so a process still holding them would make these tests time out)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HOSTILE = Path(__file__).parents[1] / "hostile"
ONE_LAW = ["--profile", "ci", "--dtype", "fp32", "--only", "rmsnorm_matches_golden"]


def _alive(pid: int) -> bool:
    """Is ``pid`` a live process (a zombie is not: it has ended, only its exit status waits for a parent)?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _survivors(pids: Path, wait: float = 5.0) -> list[int]:
    """The processes that recorded themselves in ``pids`` and still run after ``wait`` seconds (ending takes a
    moment: SIGKILL is asynchronous)."""
    recorded = [int(p.name) for p in pids.iterdir() if p.name.isdigit()]
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(_alive(pid) for pid in recorded):
        time.sleep(0.1)
    return [pid for pid in recorded if _alive(pid)]


def _start(tmp_path: Path, module: str, *extra: str, **env: str) -> tuple[subprocess.Popen, Path, Path]:
    pids, report = tmp_path / "pids", tmp_path / "r.json"
    pids.mkdir()
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", str(HOSTILE / f"{module}.py"), *ONE_LAW]
    cmd += ["--json", str(report), *extra]
    environ = {**os.environ, "NANOLM_TEST_PIDS": str(pids), **env}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, pids, report


def _drain(proc: subprocess.Popen, grace: float = 5.0) -> tuple[str, str]:
    """The command's stdout and stderr, read to their end → (out, err). Once the command has exited, both must
    reach their end within ``grace`` seconds: a process of ours still holding them (an orphaned fork server, a
    worker) would keep a caller reading them waiting — the background process of forks_a_writer, which holds
    everything its worker held, lives 8 s when nothing ends it."""
    chunks: dict[int, list[str]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    open_fds, ended = set(chunks), None
    while open_fds:
        if ended is None and proc.poll() is not None:
            ended = time.monotonic()
        assert ended is None or time.monotonic() - ended < grace, "the caller's output is still held open"
        ready, _, _ = select.select(list(open_fds), [], [], 0.1)
        for fd in ready:
            data = os.read(fd, 65536)
            chunks[fd].append(data.decode(errors="replace")) if data else open_fds.discard(fd)
    proc.wait(600)
    return "".join(chunks[proc.stdout.fileno()]), "".join(chunks[proc.stderr.fileno()])


def _wait_for(path: Path, proc: subprocess.Popen, limit: float = 300.0) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("escape", ["", "setsid"])
def test_a_background_process_of_the_subject_ends_with_the_run(escape, tmp_path):
    """The subject forks a process that would overwrite the report with "0 failed" after the run: it is ended
    with its worker's process group — or, when it left the group (setsid) as an orphan, as the worker's
    descendant; the report stays the run's; the caller's pipes close when the run ends."""
    report = tmp_path / "r.json"
    env = {"NANOLM_TEST_REPORT": str(report), "NANOLM_TEST_DELAY": "8", "NANOLM_TEST_ESCAPE": escape}
    proc, pids, report = _start(tmp_path, "forks_a_writer", **env)
    out, err = _drain(proc)
    assert proc.returncode == 1, out + err
    written = report.read_text()
    assert [p.name for p in pids.iterdir() if p.name.isdigit()], "the subject never started its background process"
    assert _survivors(pids) == []
    time.sleep(9)  # past the writer's delay: had it survived, it would have written by now
    assert not (pids / "wrote").exists() and report.read_text() == written
    doc = json.loads(written)
    assert doc["summary"]["failed"] == 1 and not doc.get("forged")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_second_worker_loads_stops_the_run(signum, tmp_path):
    """The first worker has loaded the subject, the second is still importing it (it sleeps): the signal ends the
    run at once with 128 + it, a partial report (interrupted, no result), and no importing process left."""
    proc, pids, report = _start(tmp_path, "sleeps_at_import", "--workers", "2")
    _wait_for(pids / "sleeping", proc)
    _wait_for(pids / "loaded", proc)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, out + err
    assert "Traceback" not in err, err
    doc = json.loads(report.read_text())
    assert doc["interrupted"] is True and doc["results"] == []
    assert _survivors(pids) == []


def test_a_signal_while_the_only_worker_loads_stops_the_run(tmp_path):
    proc, pids, report = _start(tmp_path, "sleeps_at_import", "--workers", "1", NANOLM_TEST_SLEEP_ALL="1")
    _wait_for(pids / "sleeping", proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err and json.loads(report.read_text())["interrupted"] is True
    assert _survivors(pids) == []


START_UP = """
import os, signal, sys
from properties.entry import cli
parser, signum = cli.build_parser, int(sys.argv[1])
def signalled():  # the signal arrives while the command line is being built: before any run
    os.kill(os.getpid(), signum)
    return parser()
cli.build_parser = signalled
sys.argv[1:] = ["check", "--profile", "ci"]
cli.run()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_start_up_exits_with_its_status_in_one_line(signum, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", START_UP, str(int(signum))], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 128 + signum, proc.stderr
    assert proc.stderr == f"nanolm-verify: interrupted by {signal.Signals(signum).name} before the run began\n"
    assert proc.stdout == ""


def test_a_law_run_is_never_lost_when_the_fork_server_dies(tmp_path):
    """Every planned law run is accounted for: the fork server dies while a worker is busy (every exit status then
    reads "dead"); that worker's result still counts — the run reports both law runs, never "1 of 2" with exit 0."""
    proc, pids, report = _start(tmp_path, "kills_the_fork_server", "--only", "swiglu_matches_golden", "--workers", "2")
    out, err = _drain(proc)
    assert (pids / "killed").exists() and (pids / "slow").exists()
    doc = json.loads(report.read_text())
    assert len(doc["results"]) == 2, out + err
    assert proc.returncode == (0 if {r["status"] for r in doc["results"]} == {"passed"} else 1), out + err


RENDERING = """
import os, signal, sys
from properties.commands.render import text
table, signum = text.format_table, int(sys.argv[1])
def signalled(results):  # the signal arrives while the verdict is being rendered: after the run
    os.kill(os.getpid(), signum)
    return table(results)
text.format_table = signalled
from properties.entry import cli
sys.argv[1:] = ["check", "--profile", "ci", "--only", "rmsnorm_matches_golden", "--dtype", "fp32", "--json", "r.json"]
cli.run()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_rendering_still_writes_the_report_then_exits_with_its_status(signum, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", RENDERING, str(int(signum))], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 128 + signum, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "rmsnorm_matches_golden" in proc.stdout
    assert f"interrupted by {signal.Signals(signum).name} (the output above is complete)" in proc.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [r["status"] for r in doc["results"]] == ["passed"]
