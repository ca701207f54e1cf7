"""What drawing the laws' cases costs, against the law runs that draw them (the ci budget assumes cheap draws).

    python bench/draw_times.py                 # 10 cases of each kind, every dtype
    python bench/draw_times.py --cases 50

For each dtype and case kind (``rmsnorm_cases``, ``swiglu_cases``, ``block_cases`` of
``properties/library/strategies/``) prints the seconds to draw ``--cases`` cases (derandomized: the same
cases on every machine) and, as the baseline measured in the same run on the same machine, the golden law that
draws them (``<Component>.<component>_matches_golden`` against the reference, ci profile): its seconds, its
examples, and the ratio of one draw to one of its examples: the share of a law's example that drawing its case
takes (near 1, the laws would spend their budget generating inputs rather than judging them). This was a timed
unit test (``test_cases_draw_quickly``): a measurement belongs here, not in the test suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
from hypothesis import HealthCheck, Phase, given, settings

from golden.formats import fmt
from properties.library import strategies as S
from properties.running.loading import load
from properties.running.runner import LAWS, run_law

KINDS = {  # strategy → the golden law that draws it
    "rmsnorm_cases": "RMSNorm.rmsnorm_matches_golden",
    "swiglu_cases": "SwiGLU.swiglu_matches_golden",
    "block_cases": "Block.block_matches_golden",
}


def time_draws(strategy: object, n: int) -> float:
    """Seconds to draw ``n`` derandomized examples of ``strategy`` (generation only, nothing shrunk)."""

    @settings(
        max_examples=n, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(strategy)
    def draw(case: object) -> None:
        pass

    start = time.perf_counter()
    draw()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10, help="cases drawn of each kind (default 10)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {args.cases} cases of each kind")
    print(f"{'dtype':6} {'cases':14} {'draw s':>8} {'law s':>8} {'examples':>8} {'draw/example':>12}")
    reference = load("nanolm_core")
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        for kind, law_id in KINDS.items():
            drawn = time_draws(getattr(S, kind)(dtype), args.cases)
            start = time.perf_counter()
            result = run_law(LAWS[law_id], reference, dtype=dtype, profile="ci")
            law = time.perf_counter() - start
            ratio = (drawn / args.cases) / (law / max(1, result.examples or 0))
            print(f"{fmt(dtype).name:6} {kind:14} {drawn:8.2f} {law:8.2f} {result.examples:8} {ratio:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
