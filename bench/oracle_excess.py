"""How much of the Block derivative oracle's unmeasured allowance correct implementations need: the calibration of
``bounds.UNSEEN_ROUNDINGS`` (docs/laws.md, "The Block's derivative laws"), repeatable.

The oracle allows 2·(the baselines' largest error) + UNSEEN_ROUNDINGS·u at the result's scale. Every comparison under
it reports its *excess* — (error − twice the baselines' error) ÷ (u at the scale), the largest over the run — in
the JSON report's ``measurements`` (``assertions.EXCESS``). This script reads those reports and prints, per law and
dtype, the largest excess, the runs it came from, and what share of UNSEEN_ROUNDINGS it uses:

    python bench/seed_sweep.py reference hf-llama --seeds 20 --keep /tmp/sweep \\
        --only Block.block_jacobian_is_identity_plus_branch,Block.block_parameter_gradients_match_fp64 \\
        --only Block.block_preserves_gradient_through_depth
    python bench/oracle_excess.py /tmp/sweep                 # every *.json report below the directory
    python bench/oracle_excess.py a.json b.json --by-impl    # one line per implementation as well

A report's file name (``IMPL-seedN.json``, as ``seed_sweep.py --keep`` writes it) names its run. Excess below 0:
the implementation erred less than twice the worst baseline. Exit status 1 when an excess reaches
UNSEEN_ROUNDINGS (a correct implementation needed all of the allowance: widen it, or find the missing baseline) or
when no report carries the measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

from properties.library.assertions import EXCESS
from properties.numerics.bounds import UNSEEN_ROUNDINGS


def reports(paths: list[Path]) -> list[Path]:
    """The JSON reports named, and those below each directory named."""
    found: list[Path] = []
    for p in paths:
        found += sorted(p.rglob("*.json")) if p.is_dir() else [p]
    return found


def excesses(path: Path) -> list[tuple[str, str, float]]:
    """(law id, dtype, excess) of each result of one report that measured an excess."""
    try:
        results = json.loads(path.read_text()).get("results", [])
    except (OSError, ValueError, AttributeError):
        return []
    out = []
    for r in results:
        value = (r.get("measurements") or {}).get(EXCESS)
        if value is not None:
            out.append((r["law_id"], r["dtype"], float(value)))  # "inf" (a non-finite result) reads as inf
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, metavar="REPORT_OR_DIR")
    parser.add_argument("--by-impl", action="store_true", help="also the largest excess of each implementation")
    args = parser.parse_args(argv)
    for p in args.paths:
        if not p.exists():
            parser.error(f"REPORT_OR_DIR {p}: no such file or directory")
    worst: dict[tuple[str, str], tuple[float, str]] = {}
    per_impl: dict[str, float] = defaultdict(lambda: -math.inf)
    count = 0
    for path in reports(args.paths):
        run = path.stem
        impl = run.rsplit("-seed", 1)[0]
        for law, dtype, x in excesses(path):
            count += 1
            key = (law.rsplit(".", 1)[-1], dtype)
            if key not in worst or x > worst[key][0]:
                worst[key] = (x, run)
            per_impl[impl] = max(per_impl[impl], x)
    if not count:
        print(f"no report under {', '.join(map(str, args.paths))} measured {EXCESS!r}", file=sys.stderr)
        return 1
    print(f"{count} results; the oracle's unmeasured allowance: {UNSEEN_ROUNDINGS}·u at the result's scale")
    width = max(len(law) for law, _ in worst)
    print(f"{'law':<{width}}  dtype  excess (u)  of allowance  run")
    for (law, dtype), (x, run) in sorted(worst.items()):
        print(f"{law:<{width}}  {dtype:<5}  {x:10.3g}  {x / UNSEEN_ROUNDINGS:12.1%}  {run}")
    if args.by_impl:
        for impl, x in sorted(per_impl.items()):
            print(f"  {impl}: largest excess {x:.3g}·u")
    top = max(x for x, _ in worst.values())
    print(f"largest excess {top:.3g}·u of {UNSEEN_ROUNDINGS}·u")
    return 1 if not top < UNSEEN_ROUNDINGS else 0


if __name__ == "__main__":
    sys.exit(main())
