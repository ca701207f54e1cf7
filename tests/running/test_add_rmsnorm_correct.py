"""No false alarms for AddRMSNorm: the two accepted orders — the fused one (the norm reads the unrounded fp32 sum,
declared and not) and vLLM's unfused one (rounded h, two roundings) — pass every AddRMSNorm law, under several
seeds (``-m slow``: the dev profile, 5 seeds each)."""

from __future__ import annotations

import types

import pytest

from properties.running.loading import load
from properties.running.runner import LAWS, run_check

SPECS = ("tests.correct_impls.add_norm_fused", "tests.correct_impls.add_norm_unfused", "nanolm_core")
N_LAWS = sum(  # every AddRMSNorm law on the CPU (those comparing an accelerator with the CPU are not planned there)
    len(law.dtypes) for law in LAWS.values() if law.component == "AddRMSNorm" and "accelerator" not in law.tags
)


def _assert_all_pass(spec: str, profile: str, seed: int, declared: bool = True) -> None:
    impl = load(spec)
    if not declared:  # the same module judged without its declaration: the undeclared bounds admit both orders
        impl = type(impl)(impl.spec, _without_conventions(impl.module))
    results = run_check(impl, profile=profile, devices=["cpu"], only=["AddRMSNorm"], seed=seed)
    bad = [r for r in results if r.status != "passed"]
    assert len(results) == N_LAWS >= 12
    assert not bad, "\n\n".join(f"{r.law_id} [{r.dtype}] {r.status}:\n{r.message}" for r in bad)


def _without_conventions(module: types.ModuleType) -> types.ModuleType:
    bare = types.ModuleType(module.__name__)
    bare.__dict__.update({k: v for k, v in vars(module).items() if k != "CONVENTIONS"})
    return bare


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.rsplit(".", 1)[-1])
def test_both_orders_pass_every_law(spec):
    _assert_all_pass(spec, "ci", 11)  # (ci is derandomized: the seed does not change the examples)


def test_the_fused_order_passes_undeclared_too():
    assert load(SPECS[0]).conventions["AddRMSNorm"].norm_input == "sum"
    _assert_all_pass(SPECS[0], "ci", 13, declared=False)


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS[:2], ids=lambda s: s.rsplit(".", 1)[-1])
@pytest.mark.parametrize("seed", range(5))
def test_both_orders_pass_every_law_in_the_dev_profile(spec, seed):
    _assert_all_pass(spec, "dev", seed)
