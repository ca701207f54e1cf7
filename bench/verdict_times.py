"""Time to a verdict over the whole catalogue of wrong implementations (the ci profile's promise: ≤ 60 s a law).

    python bench/verdict_times.py                  # the kill matrix in the ci profile, --workers 2
    python bench/verdict_times.py --workers 1 --profile dev

Runs the kill matrix (``nanolm-verify pitfalls --markdown``: every catalogue entry against every law of its
component, in the entry's dtype, plus the reference) in worker processes and reads each law's time to its verdict
— passing or failing, shrinking included. Prints one line per entry (its slowest law, its designated law's time
and verdict), then the distribution over all law runs of wrong implementations (median, p90, p99, max) and how
many exceed the 60 s budget. Exit status 1 when a designated law did not catch its entry or a verdict took over
the budget.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from properties.commands import teach
from properties.running.session import RunOptions

BUDGET = 60.0  # seconds per law verdict in the ci profile (issue: bounded time to a failing verdict)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--profile", default="ci")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    km = teach.kill_matrix(args.profile, "cpu", RunOptions.of(args.profile, workers=args.workers))
    wall = time.perf_counter() - start
    times, over, missed, pending = [], [], [], []
    for name, demo in km.demos.items():
        row = km.rows[name]
        slowest = max(row.values(), key=lambda r: r.duration)
        times += [r.duration for r in row.values()]
        over += [f"{name}: {law} {r.duration:.1f} s" for law, r in row.items() if r.duration > BUDGET]
        if not demo.ok:
            missed.append(f"{name}: {demo.outcome}")
        elif demo.pitfall.pending and not demo.caught:
            pending.append(f"{name}: {demo.outcome}, pending ({demo.pitfall.pending})")
        d = demo.result
        print(
            f"{name:30} slowest {slowest.duration:5.1f} s ({slowest.law_id.split('.')[1][:34]}, {slowest.status})"
            f"  designated {d.duration:6.2f} s {demo.outcome}",
            flush=True,
        )
    times.sort()
    q = lambda p: times[min(len(times) - 1, int(p * len(times)))]  # noqa: E731
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{len(km.demos)} entries, {len(times)} law runs, --workers {args.workers}, profile {args.profile}, "
        f"load {load:.1f}, {wall:.0f} s in all: time to a verdict median {statistics.median(times):.2f} s, "
        f"p90 {q(0.9):.1f} s, p99 {q(0.99):.1f} s, max {times[-1]:.1f} s; over {BUDGET:g} s: {len(over)}; "
        f"entries not caught as expected: {len(missed)}; pending (known gaps): {len(pending)}"
    )
    for line in over + missed + pending:
        print("  " + line)
    return 1 if over or missed else 0


if __name__ == "__main__":
    sys.exit(main())
