"""Measure ``nanolm-verify check`` with one worker and with N workers, in one invocation (same machine load).

    python bench/check_workers.py                              # reference, ci profile, --workers 1 vs 2
    python bench/check_workers.py --profile dev --seed 1       # dev profile (≤ 3 min with the workers)
    python bench/check_workers.py torch --workers 2 --repeat 3 # best of three
    python bench/check_workers.py --profile thorough --seed 1 --only-parallel   # the thorough budget (≤ 15 min)
    python bench/check_workers.py --in-process      # the isolation's cost: --workers 1 vs run_check in one process


Prints the wall-clock time of each run (the CLI's own start-up included), the ratio serial / parallel, the
machine's CPU count and load average, and whether both runs produced identical records (every field but the
per-law duration): a law's seed comes from the run seed and its id, never from which worker ran it. Exit
status 1 when the records differ or a run fails to produce its report.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from properties.running import profiles


def timed_check(impl: str, profile: str, workers: int, seed: int | None, out: Path) -> tuple[float, list[dict]]:
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", impl, "--profile", profile, "-q"]
    cmd += ["--workers", str(workers), "--json", str(out)] + (["--seed", str(seed)] if seed is not None else [])
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=out.parent)
    elapsed = time.perf_counter() - start
    tail = (proc.stdout.strip().splitlines() or ["(no output)"])[-2:]
    print(f"--workers {workers}: {elapsed:7.1f} s  exit {proc.returncode}  {' | '.join(tail)}", flush=True)
    records = json.loads(out.read_text())["results"] if out.exists() else []
    return elapsed, [{k: v for k, v in r.items() if k != "duration"} for r in records]


def timed_in_process(impl: str, profile: str, seed: int | None, cwd: Path) -> float:
    """The same plan run in one process, one law after another (what check did before the worker processes)."""
    code = (
        "import sys; from properties.running.runner import run_check; "
        f"r = run_check({impl!r}, profile={profile!r}, seed={seed!r}); "
        "print(len(r), sum(x.passed for x in r)); sys.exit(0)"
    )
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=cwd)
    elapsed = time.perf_counter() - start
    print(f"in one process: {elapsed:7.1f} s  exit {proc.returncode}  records, passed: {proc.stdout.strip()}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("impl", nargs="?", default="reference")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--seed", type=int, default=None, help="run seed (random profiles)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="N of the parallel run")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each mode; the best time counts")
    parser.add_argument("--only-parallel", action="store_true", help="measure the parallel run only")
    parser.add_argument("--in-process", action="store_true", help="also time the plan in one process (no workers)")
    args = parser.parse_args(argv)
    if args.in_process:
        with tempfile.TemporaryDirectory() as tmp:
            alone = timed_in_process(args.impl, args.profile, args.seed, Path(tmp))
            isolated, _ = timed_check(args.impl, args.profile, 1, args.seed, Path(tmp) / "isolated.json")
        print(f"isolation: --workers 1 / in one process = {isolated / alone:.2f} ({alone:.1f} s → {isolated:.1f} s)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        modes = [args.workers] if args.only_parallel else [1, args.workers]
        for workers in modes:
            best = None
            for i in range(args.repeat):
                t, records = timed_check(
                    args.impl, args.profile, workers, args.seed, Path(tmp) / f"w{workers}-{i}.json"
                )
                best = t if best is None else min(best, t)
            runs[workers] = (best, records)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    stated = profiles.get(args.profile).stated
    best_parallel = runs[args.workers][0]
    verdict = "within" if best_parallel <= stated else "OVER"
    print(
        f"stated budget of profile {args.profile}: {stated:g} s; "
        f"--workers {args.workers}: {best_parallel:.1f} s, {verdict}"
    )
    ok = all(records for _, records in runs.values())
    if len(runs) == 2:
        (serial, a), (parallel, b) = runs[1], runs[args.workers]
        same = a == b
        ok = ok and same
        print(
            f"speedup --workers 1/{args.workers}: {serial / parallel:.2f}× on {os.cpu_count()} CPUs (load {load:.1f}); "
            f"{serial:.1f} s → {parallel:.1f} s; records identical: {same} ({len(a)} records)"
        )
    else:
        print(f"{args.profile} with --workers {args.workers}: {runs[args.workers][0]:.1f} s (load {load:.1f})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
