"""``nanolm-verify fuzz IMPL --minutes M --workers N``: a long, coverage-guided campaign on the laws, then a report.

The campaign runs on HypoFuzz (``hypothesis fuzz``, the ``fuzz`` extra): it drives the laws as Hypothesis
tests (``properties.entry.fuzz_target``), spends its time on the laws whose inputs still reach new behaviour,
and stores every input it finds interesting — counterexamples first — in the shared example database
(``--database DIR`` or ``redis://HOST:PORT``; default a directory in the user's cache, printed). No scheduler of
ours: HypoFuzz distributes the laws over its worker processes, and several machines share one Redis database.

After M minutes — or, with ``--examples N``, once every law × dtype has run N examples or failed (a budget
that means the same on a slow machine as on a fast one; M still caps it) — the campaign is stopped and ``check``
runs the same laws in isolated workers with the same database: every stored counterexample is replayed first, so
the report (the table, ``--json``) lists what the campaign found, each with its shrunk input and a reproduction
line. Exit status: 0 nothing found, 1 a law
failed, 2 usage error (HypoFuzz not installed, a bad argument).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from properties.commands import arguments, check
from properties.commands.helptext import ADAPTER_IDS, Formatter
from properties.running.loading import UsageError

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
  nanolm-verify fuzz mypkg.norms --examples 2000    each law 2000 examples
  nanolm-verify fuzz hf-llama --only RMSNorm --dtype bf16 --workers 2
  nanolm-verify fuzz torch --database redis://fuzzbox:6379   several machines

adapter ids (IMPL):
{ADAPTER_IDS}

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
    p.add_argument("--examples", type=int, default=None, metavar="N", help="end once each law ran N examples or failed")
    arguments.add(p, "workers", "database", "only", "dtype", "json_path")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        spec = arguments.implementation(args.impl)
        minutes = arguments.positive(args.minutes, "--minutes", float, 7 * 24 * 60.0)  # (a week)
        examples = None if args.examples is None else arguments.positive(args.examples, "--examples", int)
        args.database = args.database or str(default_database())
        chosen = arguments.selection(args)  # the replay: profile dev, seed 0, on the CPU, with the campaign's database
        selection = dataclasses.replace(chosen, profile="dev", seed=0, devices=("cpu",))
        options = arguments.run_options(args, selection.profile)
        json_path = arguments.output_file(args.json_path, "--json")
        arguments.distinct({"--json": json_path}, arguments.run_inputs(spec, selection))
        laws = sorted({t.law_id for t in selection.tasks()})
        if not laws:
            raise UsageError("the selection runs no law")
        if importlib.util.find_spec("hypofuzz") is None:
            raise UsageError("fuzz needs HypoFuzz: install the fuzz extra (pip install 'nanolm-verify[fuzz]')")
    except UsageError as exc:
        print(f"nanolm-verify fuzz: error: {exc}", file=sys.stderr)
        return 2
    database, workers = selection.database, options.workers
    budget = f"{examples} examples a law, at most {minutes:g} min" if examples else f"{minutes:g} min"
    print(f"nanolm-verify fuzz: {spec}, {len(laws)} laws, {workers} processes, {budget}; database {database}")
    _campaign(spec, laws, list(selection.dtypes or ()), workers, minutes, database, examples)
    print("campaign over: replaying what it found")
    return check.execute(spec, dataclasses.replace(selection, only=tuple(laws)), options, json_path=json_path)


def _campaign(
    spec: str,
    laws: list[str],
    dtypes: list[str] | None,
    workers: int,
    minutes: float,
    database: str,
    examples: int | None = None,
) -> None:
    """Run ``hypothesis fuzz`` on the fuzz target for ``minutes`` (or until every law × dtype ran ``examples``
    examples or failed: the counts the fuzz target keeps in ``NANOLM_FUZZ_TALLY``), then stop its process group."""
    target = Path(__file__).resolve().parents[1] / "entry" / "fuzz_target.py"
    with tempfile.TemporaryDirectory(prefix="nanolm-fuzz-") as tmp:
        tally = Path(tmp) / "tally"
        tally.mkdir()
        env = {
            **os.environ,
            "NANOLM_IMPL": spec,
            "NANOLM_FUZZ_DATABASE": database,
            "NANOLM_FUZZ_LAWS": ",".join(laws),
            "NANOLM_FUZZ_DTYPES": ",".join(dtypes or ()),
            "HYPOTHESIS_STORAGE_DIRECTORY": str(Path(tmp) / "hypothesis"),
            "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]),  # the user's own package
            "NANOLM_FUZZ_TALLY": str(tally) if examples else "",
        }
        cli = "import sys; from hypothesis.extra.cli import main; sys.exit(main())"  # the `hypothesis` command
        cmd = [sys.executable, "-c", cli, "fuzz", "-n", str(workers), "--no-dashboard", "--", str(target)]
        cmd += ["-p", "no:cacheprovider", "-q", f"--rootdir={tmp}", "-c", os.devnull]
        log = Path(tmp) / "fuzz.log"
        with log.open("w") as out:
            proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            deadline = time.monotonic() + minutes * 60
            try:
                while proc.poll() is None and time.monotonic() < deadline and not _reached(tally, examples):
                    time.sleep(1)
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(20)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
        if examples:
            print(f"campaign over after {sum(n for n, _ in _counts(tally).values())} examples")
        if proc.returncode not in (None, 0, -signal.SIGTERM, -signal.SIGKILL):
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            print("the fuzzer stopped early:\n  " + "\n  ".join(tail), file=sys.stderr)


def _counts(tally: Path) -> dict[str, list[int]]:
    """law × dtype → [examples run, finished] over every fuzzing process (each keeps ``<pid>.json`` in ``tally``)."""
    counts: dict[str, list[int]] = {}
    for path in tally.glob("*.json"):
        for key, (n, finished) in json.loads(path.read_text()).items():
            total = counts.setdefault(key, [0, 0])
            total[0], total[1] = total[0] + n, total[1] or finished
    return counts


def _reached(tally: Path, examples: int | None) -> bool:
    """Every law × dtype of the campaign has run ``examples`` examples or has finished (failed, skipped)."""
    counts = _counts(tally) if examples else {}
    return bool(counts) and all(n >= (examples or 0) or finished for n, finished in counts.values())
