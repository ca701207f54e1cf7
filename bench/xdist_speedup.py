"""Measure the pytest-xdist speedup on the test suite: the same selection serially and with ``-n auto``.

    python bench/xdist_speedup.py                  # whole tests/ directory, ci profile
    python bench/xdist_speedup.py -- tests/adapters/test_adapters.py -k rmsnorm
    python bench/xdist_speedup.py --repeat 3       # best of three runs of each mode

Prints one line per run and the ratio serial / parallel of the best wall-clock times, with the CPU count;
both modes run in this one invocation, so the machine's load is the same for both. A failing pytest run is
reported and the measurement goes on (both modes run the same tests); the exit status is then 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

FAILED: list[str] = []


def timed_pytest(args: list[str], workers: str | None) -> float:
    """Wall-clock seconds of one ``pytest`` run (``-n workers`` when given, else ``-p no:xdist``)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    cmd += ["-n", workers] if workers else ["-p", "no:xdist"]
    env = {**os.environ, "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")}
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    tail = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"{'serial' if not workers else '-n ' + workers:>10}: {elapsed:7.1f} s   {tail}", flush=True)
    if proc.returncode not in (0, 5):  # 5: nothing collected
        FAILED.append(f"{'serial' if not workers else '-n ' + workers}: {tail}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each mode; the best time counts")
    parser.add_argument("--workers", default="auto", help="value for -n (default auto)")
    parser.add_argument("--json", help="also write the measurement to this file")
    parser.add_argument("pytest_args", nargs="*", help="pytest arguments after --; default: tests")
    args = parser.parse_args(argv)
    selection = args.pytest_args or ["tests"]
    serial = min(timed_pytest(selection, None) for _ in range(args.repeat))
    parallel = min(timed_pytest(selection, args.workers) for _ in range(args.repeat))
    result = {
        "selection": selection,
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "serial_s": round(serial, 2),
        "parallel_s": round(parallel, 2),
        "speedup": round(serial / parallel, 2),
        "failed_runs": FAILED,
    }
    print(
        f"speedup serial/-n {args.workers}: {result['speedup']}× on {result['cpus']} CPUs "
        f"({serial:.1f} s → {parallel:.1f} s)"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
    if FAILED:
        print("note: some runs had failing tests (same selection in both modes): " + "; ".join(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
