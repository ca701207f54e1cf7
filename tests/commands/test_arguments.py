"""Bad command lines: every one is refused before any work with exit status 2 and one line on stderr that names
the argument — no traceback, never a vacuous exit 0."""

from __future__ import annotations

import json

import pytest
import torch

from properties.entry.cli import main


@pytest.fixture
def paths(tmp_path):
    """A file, a directory, a corrupt JSON and a foreign JSON to aim arguments at."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "corrupt.json").write_text("{not json")
    (tmp_path / "foreign.json").write_text(json.dumps({"schema": "something/else", "records": {}}))
    (tmp_path / "norecords.json").write_text(json.dumps({"schema": "nanolm-verify/baseline/1"}))
    (tmp_path / "list.json").write_text("[1, 2]")
    return tmp_path


# argv (with {tmp} for the fixture's directory) → a fragment of the one-line error
BAD = [
    (["check", ""], "IMPL is empty"),
    (["check", "--dtype", ""], "--dtype"),
    (["check", "--dtype", ","], "--dtype"),
    (["check", "--dtype", "fp32,fp32"], "twice"),
    (["check", "--dtype", "fp8"], "'fp8' is not a dtype"),
    (["check", "--device", "tpu"], "--device 'tpu' is not a torch device type"),
    (["check", "--device", ""], "--device is empty"),
    (["check", "--database", "{tmp}/file"], "is a file"),
    (["check", "--database", "redis://127.0.0.1:1"], "cannot reach the Redis server"),
    (["check", "--threads", "0"], "--threads 0"),
    (["check", "--threads", "100000"], "--threads 100000"),
    (["check", "--workers", "0"], "--workers 0"),
    (["check", "--timeout", "0"], "--timeout 0"),
    (["check", "--timeout", "-5"], "--timeout -5"),
    (["check", "--memory-limit", "0"], "--memory-limit 0"),
    (["check", "--only", "no_such_law"], "--only 'no_such_law'"),
    (["check", "--only", "swiglu_is_elementwise_silu_gate", "--dtype", "fp64"], "runs no law"),
    (["check", "--json", "{tmp}/dir"], "is a directory"),
    (["check", "--json", "{tmp}/file/r.json"], "is a file, not a directory"),
    (["check", "--json", ""], "--json is empty"),
    (["check", "--baseline", "{tmp}/corrupt.json"], "not valid JSON"),
    (["check", "--baseline", "{tmp}/foreign.json"], "schema 'something/else'"),
    (["check", "--baseline", "{tmp}/norecords.json"], "lacks records"),
    (["check", "--baseline", "{tmp}/list.json"], "expected a JSON object"),
    (["check", "--baseline", "{tmp}/dir"], "is a directory"),
    (["check", "--baseline", "{tmp}/file/b.json"], "is a file, not a directory"),
    (["check", "no_such_module_xyz"], "no_such_module_xyz"),
    (["check", "{tmp}/dir"], "is a directory"),
    (["check", "{tmp}/missing.py"], "does not exist"),
    (["check", "tests.impls.nothing"], "defines none of"),
    (["pitfalls", "--workers", "0"], "--workers 0"),
]
if not torch.cuda.is_available():
    BAD += [(["check", "--device", "cuda"], "cuda is not available"), (["check", "--device", "all"], "not available")]


@pytest.mark.parametrize(("argv", "fragment"), BAD, ids=[" ".join(a) or "empty" for a, _ in BAD])
def test_a_bad_command_line_is_a_usage_error_before_any_work(argv, fragment, paths, capsys):
    argv = [a.replace("{tmp}", str(paths)) for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert fragment in lines[0] and "Traceback" not in err
    assert "component" not in out  # nothing ran: no table
