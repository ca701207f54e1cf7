"""No false alarms: correct implementations that compute differently pass every law, under many seeds.

By default each runs under one seed (the reference and the F.rms_norm one under two); ``-m slow`` runs the
reference and the F.rms_norm-based implementation under 10 seeds each and every other one under 5 (CI's regression
guard; the acceptance bar for a new law is ``bench/seed_sweep.py``'s 20 seeds of the dev profile, a measurement,
not a test). A law that
draws nothing (stored cases, exhaustive or enumerated checks) gives the same verdict under every seed: it runs under
an implementation's first seed only, and every later seed runs the laws that draw.
"""

from __future__ import annotations

import pytest

from properties.running.runner import LAWS, run_check
from tests.correct_impls import CORRECT

DRAWING = tuple(law_id for law_id, law in LAWS.items() if law.uses_hypothesis)  # seed-dependent laws
FAST = [
    pytest.param(spec, seed, id=f"{spec.rsplit('.', 1)[-1]}-seed{seed}")
    for spec in CORRECT
    for seed in ((101, 202) if spec in CORRECT[:2] else (303,))
]
SLOW_SEEDS = {spec: 10 if spec in CORRECT[:2] else 5 for spec in CORRECT}  # 35 check runs, ~7 min of CI's 2 cores
SLOW = [
    pytest.param(spec, seed, id=f"{spec.rsplit('.', 1)[-1]}-seed{seed}", marks=pytest.mark.slow)
    for spec in CORRECT
    for seed in range(SLOW_SEEDS[spec])
]
FIRST_SEEDS = {101, 303, 0}  # an implementation's first seed in FAST, in SLOW: every law; later seeds: DRAWING


def _assert_all_pass(spec: str, seed: int) -> None:
    only = None if seed in FIRST_SEEDS else DRAWING
    results = run_check(spec, profile="ci", devices=["cpu"], seed=seed, only=only)
    bad = [r for r in results if r.status not in ("passed", "skipped")]
    assert len(results) >= 100
    assert not bad, "\n\n".join(f"{r.law_id} [{r.dtype}] {r.status}:\n{r.message}" for r in bad)


@pytest.mark.parametrize(("spec", "seed"), FAST)
def test_correct_implementation_passes_every_law(spec, seed):
    _assert_all_pass(spec, seed)


@pytest.mark.parametrize(("spec", "seed"), SLOW)
def test_correct_implementation_passes_every_law_under_many_seeds(spec, seed):
    _assert_all_pass(spec, seed)
