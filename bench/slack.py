"""Slack of every law that compares with golden or fp64 values: how many times a correct implementation's own
error the bound allows (issue 18: ≤ 16 in fp32, fp16 and bf16, ≤ 64 in fp64, on the reference in the ci profile).

    python bench/slack.py                          # the reference, ci profile, 2 workers
    python bench/slack.py torch --profile dev      # another correct implementation
    python bench/slack.py --report check.json      # read an existing ``check --json`` report instead of running

For each such law × dtype: the median over examples of each example's headroom (``headroom_median`` in the JSON
report: max |error| ÷ bound within the example), its inverse — the *slack* — and the max headroom. A slack above
the target says the law cannot see an error that many times a correct implementation's: it is *loose* there.
Exit status 1 when a law misses its target (or the run gives no report).

Beside it, for the stored-golden laws of RMSNorm, SwiGLU and AddRMSNorm in every dtype (issue 37: a bound sound for
every accepted order cannot be closer than the worst accepted order's own error), the slack against the *worst
accepted order it emulates*: per stored case, the largest headroom of any order of ``bench/fp32_floor.py``'s family
(``tests/numerics/orders.py``: sequential, reversed, lanes, pairwise, blocked, split-K) in each accepted convention
(fused; HF's roundings to t in 16-bit dtypes) under the law's own bound; its median over the cases, inverted
(``worst-order slack``; target ≤ 16). "—" where no order is emulated (the Block: its emulation costs minutes per
case; the drawn laws: their examples are not in the report). ``--orders-only`` prints that column alone.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.numerics.orders
sys.path.insert(0, str(Path(__file__).resolve().parent))  # fp32_floor: the family of emulated orders

# The laws that compare an output or a derivative with golden values or with the fp64 derivative of the reference
# (the others compare the implementation with itself, or are bitwise).
ORACLE_LAWS = re.compile(
    r"\.(\w+_matches_golden(?:_at_code_path_sizes)?|\w+_matches_stored_golden|\w+_gradients_match_golden|\w+_match_fp64"
    r"|\w+_follows_its_module_lifecycle|rmsnorm_is_exact_up_to_the_overflow_threshold"
    r"|block_jacobian_is_identity_plus_branch|block_preserves_gradient_through_depth)$"
)
TARGET = {"fp64": 64.0}  # slack allowed per dtype; every other dtype: DEFAULT_TARGET
DEFAULT_TARGET = 16.0
# A median headroom below this is an error below 10⁻⁹ of a bound of at least ½ ULP: the reference returns the value
# golden rounds to (the rows of one value at the overflow threshold, exact but for ε's 10⁻¹⁶ relative effect) —
# exact at the dtype's resolution, so there is no slack to measure.
EXACT_BELOW = 1e-9


def run_check(impl: str, profile: str, workers: int, out: Path) -> list[dict]:
    report = out / "check.json"
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", impl, "--profile", profile, "-q"]
    cmd += ["--workers", str(workers), "--json", str(report)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=out)
    if not report.exists():
        raise SystemExit(f"slack: no report from {' '.join(cmd)}: {(proc.stderr or proc.stdout).strip()[-400:]}")
    return json.loads(report.read_text())["results"]


def rows(results: list[dict]) -> list[tuple[str, str, float | None, float | None, str]]:
    """(law, dtype, headroom_median, headroom, status) of every oracle law's result that was judged."""
    out = []
    for r in results:
        if not ORACLE_LAWS.search(r["law_id"]) or r["status"] == "skipped":
            continue
        med, top = (_num(r.get(k)) for k in ("headroom_median", "headroom"))
        out.append((r["law_id"], r["dtype"], med, top, r["status"]))
    return sorted(out)


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) else None


def worst_orders() -> dict[tuple[str, str], float]:
    """{(law id, dtype): the slack of the stored-golden law against the worst emulated accepted order}: per stored
    case the largest max |order − golden| ÷ the law's bound over the family × conventions, median over the cases,
    inverted (``inf`` where every emulated order is exact)."""
    import numpy as np
    import torch
    from fp32_floor import FAMILY

    from golden.formats import fmt
    from properties.library.laws.stored import _cases
    from properties.numerics import bounds
    from tests.numerics import orders

    torch.set_num_threads(1)

    def rmsnorm(case, h=None):
        x, w, eps = (case.tensor("x") if h is None else h), case.tensor("weight"), case.params["eps"]
        t = x.dtype
        b = bounds.rmsnorm(x, w, eps, t, drawn=True).allowed
        hf = (False, True) if t in (torch.float16, torch.bfloat16) else (False,)
        outs = [orders.rmsnorm(x.double().numpy(), w.double().numpy(), eps, t, o, c) for o in FAMILY for c in hf]
        return b, outs

    def add_rmsnorm(case):
        x, r, w, eps = case.tensor("x"), case.tensor("residual"), case.tensor("weight"), case.params["eps"]
        _, outs = rmsnorm(case, (x + r))  # the unfused order: h rounded once, then the norm of h
        return bounds.add_rmsnorm(x, r, w, eps, x.dtype, drawn=True)[0].allowed, outs

    def swiglu(case):
        x, wg, wu, wd = (case.tensor(n) for n in ("x", "w_gate", "w_up", "w_down"))
        b = bounds.swiglu(x, wg, wu, wd, x.dtype, random_weights=True).allowed
        arrays = [a.double().numpy() for a in (x, wg, wu, wd)]
        return b, [y for o in FAMILY for y in orders.swiglu(*arrays, x.dtype, o)]

    out: dict[tuple[str, str], float] = {}
    for family, component, emulate in (("rmsnorm", "RMSNorm", rmsnorm), ("swiglu", "SwiGLU", swiglu),
                                       ("add_rmsnorm", "AddRMSNorm", add_rmsnorm)):  # fmt: skip
        rooms: dict[str, list[float]] = {}
        for case in _cases(family):
            if case.cost > 3 * 10**7:  # the Llama-shaped rows: the thorough profile's, minutes in numpy
                continue
            gold = case.golden.hi + case.golden.lo
            allowed, outs = emulate(case)
            with np.errstate(all="ignore"):
                room = max(float(np.nanmax(np.abs(np.asarray(y, np.float64) - gold) / allowed)) for y in outs)
            rooms.setdefault(fmt(case.dtype).name, []).append(room)
        for dtype, rs in rooms.items():
            med = statistics.median(rs)
            out[(f"{component}.{family}_matches_stored_golden", dtype)] = 1 / med if med > 0 else float("inf")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("impl", nargs="?", default="nanolm_core")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--report", type=Path, help="a check --json report to read instead of running check")
    parser.add_argument("--orders-only", action="store_true", help="only the slack against the worst emulated order")
    args = parser.parse_args(argv)
    worst = worst_orders()
    if args.orders_only:
        print(f"{'law':58s} {'dtype':5s} {'worst-order slack':>17s}  target")
        for (law, dtype), w in sorted(worst.items()):
            print(f"{law:58s} {dtype:5s} {w:17.3g}  ≤ {DEFAULT_TARGET:g} {'ok' if w <= DEFAULT_TARGET else 'LOOSE'}")
        return 0
    if args.report:
        results = json.loads(args.report.read_text())["results"]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            results = run_check(args.impl, args.profile, args.workers, Path(tmp))
    missed = exact = 0
    print(f"{'law':58s} {'dtype':5s} {'median':>8s} {'slack':>8s} {'max':>8s} {'vs worst':>8s}  target")
    for law, dtype, med, top, status in rows(results):
        target = TARGET.get(dtype, DEFAULT_TARGET)
        slack = (1 / med if med else float("inf")) if med is not None else None
        ok = slack is not None and slack <= target and status == "passed"
        if status == "passed" and med is not None and med < EXACT_BELOW:  # exact on most examples: no slack
            exact, mark = exact + 1, "EXACT"
        else:
            missed, mark = missed + (not ok), "ok" if ok else ("FAILED" if status != "passed" else "LOOSE")
        cells = [f"{v:8.3g}" if v is not None else f"{'—':>8s}" for v in (med, slack, top, worst.get((law, dtype)))]
        print(f"{law:58s} {dtype:5s} {' '.join(cells)}  ≤ {target:g} {mark}")
    print(
        f"{missed} law × dtype results miss their slack target; on {exact} the reference's median error is 0 or below "
        f"{EXACT_BELOW:g} of the bound (EXACT: e.g. in fp64 the Block's derivative oracle is the reference itself) "
        "— no slack to measure"
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
