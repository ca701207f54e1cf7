"""``nanolm-verify fuzz IMPL --minutes M --workers N``: a long, coverage-guided campaign on the laws, then a report.

The campaign runs on HypoFuzz (``hypothesis fuzz``, the ``fuzz`` extra): it drives the laws as Hypothesis
tests (``properties.entry.fuzz_target``), spends its time on the laws whose inputs still reach new behaviour,
and stores every input it finds interesting — counterexamples first — in the shared example database
(``--database DIR`` or ``redis://HOST:PORT``; default a directory in the user's cache, printed). No scheduler of
ours: HypoFuzz distributes the laws over its worker processes, and several machines share one Redis database.

After M minutes the campaign is stopped and ``check`` runs the same laws in isolated workers with the same
database: every stored counterexample is replayed first, so the report (the table, ``--json``) lists what the
campaign found, each with its shrunk input and a reproduction line. Exit status: 0 nothing found, 1 a law
failed, 2 usage error (HypoFuzz not installed, a bad argument).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from properties.commands import arguments, check
from properties.commands.helptext import Formatter, adapters_text
from properties.running.runner import UsageError

__all__ = ["default_database", "main", "register"]


def default_database() -> Path:
    """$XDG_CACHE_HOME/nanolm-verify/examples (~/.cache/… by default): never the working directory."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nanolm-verify" / "examples"


DESCRIPTION = """\
A long, coverage-guided campaign on the laws (HypoFuzz, the fuzz extra), then a
report. HypoFuzz spends the time on the laws whose inputs still reach new
behaviour and stores every interesting input, counterexamples first, in the
shared example database (--database; default: a folder in your cache, printed).
After M minutes, check runs the same laws with that database: every stored
counterexample is replayed first, so the table and --json list what was found."""

EPILOG = f"""\
examples:
  nanolm-verify fuzz mypkg.norms --minutes 30 --json fuzz.json
  nanolm-verify fuzz hf-llama --only RMSNorm --dtype bf16 --workers 2
  nanolm-verify fuzz torch --database redis://fuzzbox:6379   several machines

adapter ids (IMPL):
{adapters_text()}

exit status:
  0  nothing found
  1  a law failed
  2  usage error: HypoFuzz not installed, a bad argument
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "fuzz",
        help="a long fuzzing campaign on the laws, then a report",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=Formatter,
    )
    p.add_argument("impl", nargs="?", default=None, help="module, .py path or adapter id")
    p.add_argument("--minutes", type=float, default=10.0, help="length of the campaign (default 10)")
    arguments.add(p, "workers", "database", "only", "dtype", "json_path")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        spec = arguments.implementation(args.impl)
        minutes = arguments.positive(args.minutes, "--minutes")
        args.database = args.database or str(default_database())
        chosen = arguments.selection(args)  # the replay: profile dev, seed 0, on the CPU, with the campaign's database
        selection = dataclasses.replace(chosen, profile="dev", seed=0, devices=("cpu",))
        options = arguments.run_options(args, selection.profile)
        json_path = arguments.output_file(args.json_path, "--json")
        laws = sorted({t.law_id for t in selection.tasks()})
        if not laws:
            raise UsageError("the selection runs no law")
        if importlib.util.find_spec("hypofuzz") is None:
            raise UsageError("fuzz needs HypoFuzz: install the fuzz extra (pip install 'nanolm-verify[fuzz]')")
    except UsageError as exc:
        print(f"nanolm-verify fuzz: error: {exc}", file=sys.stderr)
        return 2
    database, workers = selection.database, options.workers
    print(f"nanolm-verify fuzz: {spec}, {len(laws)} laws, {workers} processes, {minutes:g} min; database {database}")
    _campaign(spec, laws, list(selection.dtypes or ()), workers, minutes, database)
    print("campaign over: replaying what it found")
    return check.execute(spec, dataclasses.replace(selection, only=tuple(laws)), options, json_path=json_path)


def _campaign(
    spec: str, laws: list[str], dtypes: list[str] | None, workers: int, minutes: float, database: str
) -> None:
    """Run ``hypothesis fuzz`` on the fuzz target for ``minutes``, then stop its whole process group."""
    target = Path(__file__).resolve().parents[1] / "entry" / "fuzz_target.py"
    with tempfile.TemporaryDirectory(prefix="nanolm-fuzz-") as tmp:
        env = {
            **os.environ,
            "NANOLM_IMPL": spec,
            "NANOLM_FUZZ_DATABASE": database,
            "NANOLM_FUZZ_LAWS": ",".join(laws),
            "NANOLM_FUZZ_DTYPES": ",".join(dtypes or ()),
            "HYPOTHESIS_STORAGE_DIRECTORY": str(Path(tmp) / "hypothesis"),
            "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]),  # the user's own package
        }
        cli = "import sys; from hypothesis.extra.cli import main; sys.exit(main())"  # the `hypothesis` command
        cmd = [sys.executable, "-c", cli, "fuzz", "-n", str(workers), "--no-dashboard", "--", str(target)]
        cmd += ["-p", "no:cacheprovider", "-q", f"--rootdir={tmp}", "-c", os.devnull]
        log = Path(tmp) / "fuzz.log"
        with log.open("w") as out:
            proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            deadline = time.monotonic() + minutes * 60
            try:
                while proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(1)
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(20)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
        if proc.returncode not in (None, 0, -signal.SIGTERM, -signal.SIGKILL):
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            print("the fuzzer stopped early:\n  " + "\n  ".join(tail), file=sys.stderr)
