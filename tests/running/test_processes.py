"""Workers come from a fork server (properties.running.processes) that imported torch and the laws once; what a
spawned worker had for free — the verifier's environment as it is when the run starts — still reaches them."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from properties.entry.cli import main
from properties.running import processes

LAW = ["--only", "rmsnorm_maps_zero_row_to_zeros", "--dtype", "fp32", "--profile", "ci", "--workers", "1", "-q"]


def test_a_worker_sees_the_environment_of_the_run_not_of_the_fork_server(tmp_path, monkeypatch, capsys):
    processes.warm_up()  # the server exists before the variable does
    monkeypatch.setenv("NANOLM_PROBE", "set after the fork server started")
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n"
        "if os.environ.get('NANOLM_PROBE') != 'set after the fork server started':\n"
        "    raise RuntimeError(f'NANOLM_PROBE={os.environ.get(\"NANOLM_PROBE\")!r}')\n"
        "from nanolm_core import RMSNorm  # noqa: F401\n"
    )
    report = tmp_path / "r.json"
    assert main(["check", str(probe), *LAW, "--json", str(report)]) == 0, capsys.readouterr()
    assert json.loads(report.read_text())["summary"]["passed"] == 1
    monkeypatch.delenv("NANOLM_PROBE")
    assert main(["check", str(probe), *LAW]) == 2  # and an unset one is unset there too
    assert "NANOLM_PROBE=None" in capsys.readouterr().err


@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here")
def test_workers_are_children_of_the_fork_server_not_of_the_verifier(tmp_path, monkeypatch, capsys):
    """A spawned worker would be the verifier's child and import torch again; a forked one is the server's."""
    processes.warm_up()
    processes.warm_up()  # idempotent: one server
    monkeypatch.setenv("NANOLM_VERIFIER_PID", str(os.getpid()))
    probe = tmp_path / "forked.py"
    probe.write_text(
        "import os\n"
        "if os.getppid() == int(os.environ['NANOLM_VERIFIER_PID']):\n"
        "    raise RuntimeError('the worker is a child of the verifier: not forked from the server')\n"
        "from nanolm_core import RMSNorm  # noqa: F401\n"
    )
    assert main(["check", str(probe), *LAW]) == 0, capsys.readouterr()
