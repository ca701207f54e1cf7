"""No verdict depends on law order or on which other laws ran in the process: the global generators a subject
may draw from (torch, random, numpy) start every example from the same state, and are restored after it."""

from __future__ import annotations

import json
import random
import types
from typing import ClassVar

import numpy as np
import torch
from torch import nn

import nanolm_core
from properties.library.laws import LAWS
from properties.library.subject import Implementation
from properties.running.runner import run_law


class NoisyRMSNorm(nanolm_core.RMSNorm):
    """The reference plus a relative perturbation drawn from torch's global generator (dropout left on at
    inference, stochastic rounding): whether a law catches it depends only on the numbers drawn."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return y * (1 + 1e-3 * torch.rand((), dtype=torch.float64).item())


def _subject() -> Implementation:
    module = types.ModuleType("noisy")
    module.RMSNorm, module.SwiGLU = NoisyRMSNorm, nanolm_core.SwiGLU
    return Implementation("tests.running.test_order.noisy", module)


def _consume_global_randomness() -> None:  # what other laws or subjects may do before this law runs
    torch.rand(12345)
    random.random()
    np.random.rand(7)


def test_a_subject_drawing_random_numbers_gets_the_same_verdict_whatever_ran_before():
    law, impl = LAWS["RMSNorm.rmsnorm_matches_golden"], _subject()
    first = run_law(law, impl, dtype="fp32", profile="ci")
    _consume_global_randomness()
    torch.manual_seed(1234)
    second = run_law(law, impl, dtype="fp32", profile="ci")
    assert first.status == second.status == "failed" and first.cause == "law"  # 1e-3 relative: far outside fp32
    assert first.message == second.message  # the same counterexample, the same numbers


def test_the_callers_generators_are_left_as_they_were():
    torch.manual_seed(99)
    expected = torch.rand(3)
    torch.manual_seed(99)
    run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], _subject(), dtype="fp32", profile="ci")
    run_law(LAWS["SwiGLU.swiglu_has_three_matrices_of_ffn_dim"], _subject(), dtype="fp32", profile="ci")
    assert torch.equal(torch.rand(3), expected)


def test_a_law_without_hypothesis_starts_from_the_same_generator_state():
    class Counting(nn.Module):  # records the first number torch's generator gives it at construction
        seen: ClassVar[list[float]] = []

        def __init__(self, D: int, F: int) -> None:
            super().__init__()
            Counting.seen.append(torch.rand(()).item())
            self.inner = nanolm_core.SwiGLU(D, F)
            self.w_gate, self.w_up, self.w_down = self.inner.w_gate, self.inner.w_up, self.inner.w_down

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x)

    module = types.ModuleType("counting")
    module.SwiGLU = Counting
    impl = Implementation("tests.running.test_order.counting", module)
    law = LAWS["SwiGLU.swiglu_has_three_matrices_of_ffn_dim"]
    run_law(law, impl, dtype="fp32", profile="ci")
    _consume_global_randomness()
    run_law(law, impl, dtype="fp32", profile="ci")
    n = len(Counting.seen) // 2
    assert n > 0 and Counting.seen[:n] == Counting.seen[n:]


def test_one_worker_and_two_workers_give_identical_records(tmp_path):
    from properties.entry.cli import main

    def records(workers: int) -> list[dict]:
        out = tmp_path / f"w{workers}.json"
        argv = ["check", "--only", "RMSNorm,SwiGLU.swiglu_matches_stored_golden", "--dtype", "fp32,bf16"]
        assert main([*argv, "--profile", "ci", "--workers", str(workers), "--json", str(out), "-q"]) == 0
        drop = ("duration", "counterexample")
        results = json.loads(out.read_text())["results"]
        for r in results:  # wall times, like duration: the code-path laws' per-case seconds (their budget's input)
            r["measurements"].pop("case seconds", None)
        return [{k: v for k, v in r.items() if k not in drop} for r in results]

    one, two = records(1), records(2)
    assert len(one) > 20 and one == two  # each law seeded from the run seed and its id, not from which worker ran it


def test_the_draws_do_not_depend_on_the_constants_of_loaded_source(monkeypatch):
    """Hypothesis may answer a draw with a constant from the source of a loaded "local" module (the subject, an
    editable checkout of the suite): the laws' draws — hence every verdict of a derandomized run — must be the same
    whatever such constants exist, as for an install in site-packages, where none are local."""
    from hypothesis.internal.conjecture import providers

    impl = Implementation("nanolm_core", nanolm_core)
    laws = [LAWS[i] for i in ("RMSNorm.rmsnorm_matches_golden", "SwiGLU.swiglu_matches_golden")]

    def measured() -> list[tuple]:
        results = [run_law(law, impl, dtype="fp32", profile="ci") for law in laws]
        return [(r.max_ulp, r.headroom, json.dumps(r.worst_input, sort_keys=True)) for r in results]

    plain = measured()
    many = providers.Constants()  # a subject (or a checkout) full of in-range constants
    for i in range(300):
        many.integers.add(i)
        many.floats.add(i / 3)
    monkeypatch.setattr(providers, "_get_local_constants", lambda: many)
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        assert measured() == plain
    finally:
        providers.CONSTANTS_CACHE.cache.clear()
