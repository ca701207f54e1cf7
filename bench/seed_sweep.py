"""Run ``nanolm-verify check`` under many seeds and count the failures: the no-false-alarm bar for a correct
implementation (issue 10: 20 seeds of the dev profile on the reference and ``torch``, 0 failures).

    python bench/seed_sweep.py                                   # reference, dev profile, seeds 1…20
    python bench/seed_sweep.py torch --seeds 20 --only Block     # one component
    python bench/seed_sweep.py reference torch --only RMSNorm.rmsnorm_follows_its_module_lifecycle,Block
    python bench/seed_sweep.py hf-llama --first 6 --seeds 20     # resume a sweep at seed 6

One line per (implementation, seed): results, failures, wall time; then every failure's first line and its
counterexample file (kept under ``--keep DIR`` when given, else in a temporary directory that is removed).
Exit status 1 when any run fails a law or produces no report.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _absolute(impl: str) -> str:
    """IMPL with a file or directory path made absolute (``path.py`` or ``path.py:Name``): the checks run from the
    report directory, where a relative path names nothing. Module names and adapter ids are left as given."""
    path, sep, name = impl.partition(":")
    return str(Path(path).resolve()) + sep + name if Path(path).exists() else impl


def sweep(impl: str, seed: int, args: argparse.Namespace, out: Path) -> tuple[list[dict], float, str]:
    report = out / f"{impl.replace('/', '_')}-seed{seed}.json"
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", _absolute(impl), "--profile", args.profile, "-q"]
    cmd += ["--seed", str(seed), "--workers", str(args.workers), "--json", str(report)]
    cmd += [f"--only={sel}" for sel in args.only]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=out)
    elapsed = time.perf_counter() - start
    results = json.loads(report.read_text())["results"] if report.exists() else []
    why = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])  # when there is no report
    return results, elapsed, why


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("impls", nargs="*", default=["reference"], metavar="IMPL")
    parser.add_argument("--profile", default="dev")
    parser.add_argument("--seeds", type=int, default=20, help="seeds FIRST…N")
    parser.add_argument("--first", type=int, default=1, help="the first seed (default 1: a sweep resumed later)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", action="append", default=[], metavar="SEL", help="as check --only")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR", help="keep reports and counterexamples")
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep.resolve() if args.keep else Path(tmp)
        for impl in args.impls:
            total, bad_runs, seconds = 0, 0, 0.0
            for seed in range(args.first, args.seeds + 1):
                results, elapsed, why = sweep(impl, seed, args, out)
                bad = [r for r in results if r["status"] not in ("passed", "skipped", "xfailed")]
                total, seconds = total + len(results), seconds + elapsed
                bad_runs += bool(bad) or not results
                line = f"{impl} seed {seed:2d}: {len(results):3d} results, {len(bad)} failed, {elapsed:6.1f} s"
                print(line, flush=True)
                if not results:
                    failures.append(f"{impl} seed {seed}: no report ({why})")
                for r in bad:
                    first = (r["message"] or "").splitlines()[0] if r["message"] else ""
                    failures.append(f"{impl} seed {seed}: {r['law_id']} [{r['dtype']}] {r['cause']}: {first}")
                    if r.get("counterexample"):
                        failures.append(f"    {r['counterexample']}")
            print(f"{impl}: seeds {args.first}…{args.seeds} of {args.profile}, {total} results, "
                  f"{bad_runs} runs with a failure, {seconds:.0f} s", flush=True)  # fmt: skip
    for line in failures:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
