"""The process boundary's cost: a ``check`` run with the subject in a process of its own vs imported by the judge.

    python bench/boundary.py                       # reference, ci profile, default workers, boundary off then on
    python bench/boundary.py torch --repeat 3      # best of three of each
    python bench/boundary.py --only RMSNorm --workers 1

Both runs go through the run session as ``check`` does (``session.run``: worker pools, the same plan, the same seed),
one after the other in this process, so they see the same machine load; the CLI's start-up and rendering (the same
for both) are left out. Prints each run's wall-clock time, the ratio (the target: at most 1.3), the machine's CPU
count and load average, and whether both runs gave the same verdicts (status and cause per law × dtype). Exit
status 1 when the verdicts differ or a run does not pass what the other passes.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

from properties.running import session


def timed(impl: str, selection: session.Selection, options: session.RunOptions) -> tuple[float, dict]:
    start = time.perf_counter()
    run = session.run([impl], selection, options)
    elapsed = time.perf_counter() - start
    verdicts = {(r.law_id, r.dtype, r.device): (r.status, r.cause) for r in run.results}
    passed = sum(s == "passed" for s, _ in verdicts.values())
    where = "subject process (boundary)" if options.boundary else "in the judge (no boundary)"
    print(f"{where:28s} {elapsed:7.1f} s   {len(verdicts)} results, {passed} passed", flush=True)
    return elapsed, verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("impl", nargs="?", default="reference")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--only", default=None, help="comma-separated components or law ids")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs of each")
    args = parser.parse_args(argv)
    only = tuple(args.only.split(",")) if args.only else None
    selection = session.Selection(profile=args.profile, only=only, seed=args.seed)
    with_boundary = session.RunOptions.of(args.profile, workers=args.workers)
    without = dataclasses.replace(with_boundary, boundary=False)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.impl}, profile {args.profile}, "
          f"{with_boundary.workers} workers", flush=True)  # fmt: skip
    off, on = [], []
    for _ in range(max(1, args.repeat)):
        off.append(timed(args.impl, selection, without))
        on.append(timed(args.impl, selection, with_boundary))
    best_off, best_on = min(t for t, _ in off), min(t for t, _ in on)
    same = all(v == off[0][1] for _, v in off + on)
    print(f"boundary / no boundary: {best_on / best_off:.2f}x (best {best_on:.1f} s vs {best_off:.1f} s; target ≤ 1.3)")
    print(f"verdicts identical: {same}; load average now {os.getloadavg()[0]:.2f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
