"""What an interpreted Triton check costs: `check IMPL --profile ci` with the kernels interpreted, law by law, against
the reference's run of the same selection in the same session (the baseline: what the laws cost without the
interpreter).

    python bench/triton_budget.py                       # liger, profile ci, 2 workers
    python bench/triton_budget.py --impl fla --only RMSNorm --workers 1

Prints the wall time of each run, their ratio, the machine's load around them (the machine may be shared: a wall
time means little without it), the ten slowest law runs of the interpreted implementation (with the reference's
time for the same law run and the ratio), the time per law family, and each code-path-size law's cases: the
seconds of each case judged and the sizes the profile's time per case left (laws/paths.py,
``Profile.case_budget``; docs/adapters.md). Exit status 0; the budget (5 minutes for `check liger --profile ci` on
two cores) is reported, never asserted.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

from properties.running import session

BUDGET = 300.0  # seconds: check liger --profile ci on two cores (issue #36)


def run(spec: str, selection: session.Selection, workers: int, timeout: float) -> tuple[float, dict]:
    start = time.perf_counter()
    out = session.run([spec], selection, session.RunOptions.of(selection.profile, workers=workers, timeout=timeout))
    return time.perf_counter() - start, {(r.law_id, r.dtype): r for r in out.results}


def _family(component: str, name: str) -> str:
    """A law's name without its component's prefix (add_rmsnorm_x and rmsnorm_x: one family x)."""
    parts = name.split("_")
    for k in range(1, len(parts)):
        if "".join(parts[:k]) == component.lower():
            return "_".join(parts[k:])
    return name


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="liger")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--only", default=None, help="components or law ids, comma-separated")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    only = tuple(args.only.split(",")) if args.only else None
    selection = session.Selection(profile=args.profile, only=only)
    load = _load()
    wall, got = run(args.impl, selection, args.workers, args.timeout)
    load += f" → {_load()}"
    base_wall, base = run("reference", selection, args.workers, args.timeout)
    verdict = "within" if wall <= BUDGET else "OVER"
    print(f"{args.impl} (interpreted where there is no CUDA): {wall:.1f} s; reference: {base_wall:.1f} s; "
          f"ratio {wall / max(base_wall, 1e-9):.1f}; budget {BUDGET:.0f} s: {verdict}")  # fmt: skip
    print(f"  load (1/5/15 min) before → after the {args.impl} run: {load}; {os.cpu_count()} cores")
    statuses = collections.Counter(r.status for r in got.values())
    print("results:", ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))
    print("\nslowest law runs (s):  interpreted  reference  ratio")
    for key, r in sorted(got.items(), key=lambda kv: -kv[1].duration)[:10]:
        b = base.get(key)
        ref = b.duration if b else float("nan")
        print(f"  {key[0]}[{key[1]}]: {r.duration:.1f}  {ref:.1f}  {r.duration / max(ref, 1e-3):.0f}x  ({r.status})")
    families: dict[str, float] = collections.defaultdict(float)
    for (law, _), r in got.items():
        families[_family(*law.split(".", 1))] += r.duration
    print("\nlaw-seconds by law (all dtypes), the five largest:")
    for name, seconds in sorted(families.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  {name}: {seconds:.0f} s")
    print("\ncode-path-size laws: seconds per case judged; sizes left by the profile's time per case")
    for (law, dtype), r in got.items():
        cases, left = r.measurements.get("case seconds") or {}, r.measurements.get("sizes left") or []
        if cases or left:
            print(f"  {law}[{dtype}] {r.status}, {r.duration:.0f} s")
            for name, seconds in cases.items():
                print(f"    {seconds:7.1f} s  {name}")
            for x in left:
                print(f"     left    {x['case']} (estimated {x['estimated s']:.0f} s > {x['budget s']:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
