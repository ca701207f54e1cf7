"""Shared example databases: a counterexample found by one run is replayed first by the next — through a directory
database, and through a real redis-server on localhost (started here; CI installs it)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from properties.entry.cli import main
from properties.library.laws import LAWS

# A bug of a tail path: only a width above 16 that is no multiple of 16 shows it (the law's pins, D = 16 and 48,
# pass), so the generator must reach such a D to see it, and shrinking keeps D small.
WIDE_ONLY = """
    import torch
    import nanolm_core


    class RMSNorm(nanolm_core.RMSNorm):
        def forward(self, x):
            y = super().forward(x)
            return y * 1.5 if x.shape[-1] > 16 and x.shape[-1] % 16 else y
"""
LAW = "RMSNorm.rmsnorm_gradients_match_golden"
PINS = len(LAWS[LAW].body.hypothesis_explicit_examples)  # @example pins run before a database replay (D ≤ 16: pass)
ARGS = ["--only", LAW, "--dtype", "fp32", "--profile", "dev", "--seed", "7", "-q"]


def _found_after(tmp_path: Path, impl: str, database: str, name: str) -> int:
    report = tmp_path / f"{name}.json"
    assert main(["check", impl, *ARGS, "--database", database, "--json", str(report), "--workers", "1"]) == 1
    [result] = json.loads(report.read_text())["results"]
    assert result["status"] == "failed" and result["cause"] == "law"
    return result["found_after"]


@pytest.fixture
def wide_only(tmp_path: Path) -> str:
    path = tmp_path / "wide_only.py"
    path.write_text(textwrap.dedent(WIDE_ONLY))
    return str(path)


def test_a_directory_database_replays_the_counterexample_first(tmp_path, wide_only, capsys):
    db = tmp_path / "db"
    first = _found_after(tmp_path, wide_only, str(db), "first")
    assert any(db.rglob("*")), "nothing was stored"
    assert first > PINS + 1  # the generator needed several examples to reach D > 16
    assert _found_after(tmp_path, wide_only, str(db), "second") == PINS + 1  # the first example after the pins


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path: Path):
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed; .ci/run installs it")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    cmd = [
        server,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(tmp_path),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120  # a safety net, not a measurement: the server starts in milliseconds when idle
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"redis-server on port {port} did not accept connections (exit status {proc.poll()})")
            time.sleep(0.1)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_redis_database_shares_the_counterexample_with_another_process(tmp_path, wide_only, redis_url, capsys):
    first = _found_after(tmp_path, wide_only, redis_url, "first")  # run in one worker process …
    assert first > PINS + 1
    assert _found_after(tmp_path, wide_only, redis_url, "second") == PINS + 1  # … replayed first in another
