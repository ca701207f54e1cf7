"""What the issue-22 machinery costs, as ratios against a baseline measured in the same run.

    python bench/diagnosis_cost.py            # ci profile, in this process
    python bench/diagnosis_cost.py --repeat 3

1. *Shadow bounds* (``bounds.shadowed``: every bound of a declared component also evaluated without each departing
   declaration, so a run can tell whether it needed it): the RMSNorm laws of a correct implementation declaring
   fp64 computed in fp32, with the shadows on and off. An undeclared implementation computes none (no cost).
2. *Diagnosis* (``library.diagnosis``: only on failures): the failing law runs of a few catalogue entries, with the
   diagnosis on and off.

Prints the seconds of each and the ratio on / off (the machine's load moves both alike).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from unittest import mock

from properties.gallery import PITFALLS
from properties.numerics import bounds
from properties.running import runner
from properties.running.loading import load
from properties.running.runner import LAWS, plan
from tests.correct_impls.unconventional import SUBJECTS, subject

ENTRIES = ("eps_outside_sqrt", "rope_interleaved", "token_mixing", "rmsnorm_cached_weight_cast", "swapped_gate_up")


@contextlib.contextmanager
def _no_shadows() -> Iterator[None]:
    with mock.patch.object(bounds, "shadowed", lambda alternatives: contextlib.nullcontext()):
        yield


@contextlib.contextmanager
def _no_diagnosis() -> Iterator[None]:
    with mock.patch.object(runner, "_diagnose", lambda result, ctx: None):
        yield


def _declared_rmsnorm() -> float:
    component, cls, declaration = SUBJECTS["fp32 arithmetic"]
    impl = subject(component, cls, declaration)
    start = time.perf_counter()
    for task in plan(profile="ci", only=["RMSNorm"], dtypes=["fp64"]):
        task.run(impl)
    return time.perf_counter() - start


def _failures() -> float:
    start = time.perf_counter()
    for name in ENTRIES:
        p = PITFALLS[name]
        runner.run_law(LAWS[p.law], load(p.module), dtype=p.dtype, profile="ci")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="best of N for each measurement")
    args = parser.parse_args()
    for name, measure, off in (
        ("shadow bounds", _declared_rmsnorm, _no_shadows),
        ("diagnosis", _failures, _no_diagnosis),
    ):
        on = min(measure() for _ in range(args.repeat))
        with off():
            base = min(measure() for _ in range(args.repeat))
        print(f"{name:14} on {on:6.2f} s   off {base:6.2f} s   ratio {on / base:.2f}")


if __name__ == "__main__":
    main()
