"""Time to a verdict over the whole catalogue of wrong implementations (the ci profile's promise: ≤ 60 s a law).

    python bench/verdict_times.py                  # every catalogue entry, its component's laws, --workers 2
    python bench/verdict_times.py --workers 1 mean_subtraction non_causal

For each entry of ``properties.gallery.PITFALLS`` it runs ``nanolm-verify check properties.gallery.NAME
--only COMPONENT --profile ci`` in a fresh process (what a user runs) and reads the JSON report: the slowest
law's time (a passing or a failing verdict, shrinking included), the designated law's time and verdict, and the
wall-clock time of the whole check. Prints one line per entry, then the distribution (median, p90, max) of the
slowest law and how many exceed the 60 s budget. Exit status 1 when a designated law did not fail or a law took
over the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from properties.gallery import PITFALLS

BUDGET = 60.0  # seconds per law verdict in the ci profile (issue: bounded time to a failing verdict)


def one(name: str, workers: int, tmp: Path) -> dict:
    pitfall = PITFALLS[name]
    component = pitfall.law.split(".")[0]
    report = tmp / f"{name}.json"
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", f"properties.gallery.{name}", "--only", component]
    cmd += ["--profile", "ci", "--workers", str(workers), "--json", str(report), "-q"]
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=tmp)
    wall = time.perf_counter() - start
    results = json.loads(report.read_text())["results"] if report.exists() else []
    slowest = max(results, key=lambda r: r["duration"], default=None)
    designated = [r for r in results if r["law_id"] == pitfall.law and r["dtype"] == pitfall.dtype]
    status = designated[0]["status"] + (f" ({designated[0]['cause']})" if designated[0].get("cause") else "")
    return {
        "name": name,
        "wall": wall,
        "slowest": slowest["duration"] if slowest else float("nan"),
        "slowest_law": f"{slowest['law_id']} {slowest['dtype']}" if slowest else "-",
        "designated": designated[0]["duration"] if designated else float("nan"),
        "status": status if designated else "no result",
        "pending": bool(pitfall.pending),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="catalogue entries (default: all)")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    names = args.names or list(PITFALLS)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            row = one(name, args.workers, Path(tmp))
            rows.append(row)
            print(
                f"{name:28} wall {row['wall']:6.1f} s  slowest law {row['slowest']:5.1f} s  "
                f"designated {row['designated']:6.2f} s {row['status']}",
                flush=True,
            )
    slowest = sorted(r["slowest"] for r in rows)
    over = [r for r in rows if r["slowest"] > BUDGET]
    missed = [r for r in rows if not r["pending"] and not r["status"].startswith("failed (law)")]
    p90 = slowest[min(len(slowest) - 1, int(0.9 * len(slowest)))]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{len(rows)} entries, --workers {args.workers}, load {load:.1f}: slowest law per entry median "
        f"{statistics.median(slowest):.1f} s, p90 {p90:.1f} s, max {slowest[-1]:.1f} s "
        f"({max(rows, key=lambda r: r['slowest'])['slowest_law']}); over {BUDGET:g} s: {len(over)}; "
        f"designated law not failing (cause law): {len(missed)}"
    )
    return 1 if over or missed else 0


if __name__ == "__main__":
    sys.exit(main())
