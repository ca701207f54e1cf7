"""Issue 37: a declaration is scoped to the dtypes it names, and a declaration the probabilistic tier can model keeps
it on. Declaring fp64's compute dtype used to switch fp16's tier off (``Arithmetic.__bool__``: any key, any dtype),
so an fp16 FAIL became a pass; every declared wrapper was judged on the blunt tier in every dtype, silently."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from golden.formats import fmt
from properties.numerics import bounds
from properties.numerics.bounds import Arithmetic

EPS = 1e-6


def _case(dtype: torch.dtype, D: int = 64) -> tuple[torch.Tensor, ...]:
    rng = np.random.default_rng(D)
    x, w, g = rng.standard_normal((8, D)), rng.uniform(0.5, 1.5, D), rng.standard_normal((8, D))
    return tuple(torch.from_numpy(a).to(dtype) for a in (x, w, g))


def _tiers(dtype: torch.dtype, arithmetic: Arithmetic | None) -> list[bounds.Bound]:
    x, w, g = _case(dtype)
    with bounds.declared(arithmetic):
        return [bounds.rmsnorm(x, w, EPS, dtype, drawn=True), *bounds.rmsnorm_vjp(x, w, EPS, g, dtype, drawn=True)]


@pytest.mark.parametrize(
    "other",
    [{"compute": {"fp64": "fp32"}}, {"eps": {"fp32": "bf16"}}, {"accumulation": {"bf16": "bf16"}},
     {"flush": {"fp64": frozenset({"input"})}}],
    ids=["compute fp64", "eps fp32", "accumulation bf16", "flush fp64"],
)  # fmt: skip
def test_a_declaration_about_another_dtype_changes_nothing_in_fp16(other) -> None:
    plain, declared = _tiers(torch.float16, None), _tiers(torch.float16, Arithmetic(**other))
    for a, b in zip(plain, declared, strict=True):
        assert a.prob is not None and b.prob is not None, "the tier judges fp16 under a declaration about fp64"
        np.testing.assert_array_equal(a.prob, b.prob)
        np.testing.assert_array_equal(a.abs, b.abs)
        assert b.judge == "probabilistic" and not b.tier_off


@pytest.mark.parametrize("dtype, c", [(torch.float16, "fp32"), (torch.float32, "fp64"), (torch.bfloat16, "fp64")])
def test_a_declared_compute_dtype_that_holds_the_input_is_a_model_not_a_reason_to_go_blunt(dtype, c) -> None:
    for b in _tiers(dtype, Arithmetic(compute={fmt(dtype).name: c})):
        assert b.prob is not None and np.isfinite(b.prob).all() and b.judge == "probabilistic", b.formula


def test_a_declaration_the_tier_cannot_model_keeps_it_off_in_its_dtype_only_and_says_so() -> None:
    arithmetic = Arithmetic(eps={"fp16": "fp32"}, compute={"fp64": "fp32"})
    for b in _tiers(torch.float16, arithmetic):
        assert b.prob is None and b.judge == "deterministic"
        assert b.tier_off == "declared eps_dtype in fp16: not in the tier's model"
    for b in _tiers(torch.float64, arithmetic):  # fp64 computed in fp32: inputs rounded to c, not in the sites
        assert b.prob is None and "compute_dtype fp32" in b.tier_off
    for b in _tiers(torch.float32, arithmetic):  # neither declaration names fp32
        assert b.judge == "probabilistic" and not b.tier_off


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_an_accumulation_as_wide_as_the_compute_dtype_keeps_the_tier_and_its_bounds(dtype) -> None:
    """Liger and fla declare fp32 accumulation: for 16-bit and fp32 inputs that is c, the sums the sites have —
    same bounds, tier on. An accumulation narrower than c (t itself for 16-bit inputs) is not in the model."""
    name = fmt(dtype).name
    plain, wide = _tiers(dtype, None), _tiers(dtype, Arithmetic(accumulation={name: "fp32"}))
    for a, b in zip(plain, wide, strict=True):
        assert b.judge == "probabilistic" and not b.tier_off, b.tier_off
        np.testing.assert_array_equal(a.prob, b.prob)
        np.testing.assert_array_equal(a.abs, b.abs)
    if dtype != torch.float32:
        for b in _tiers(dtype, Arithmetic(accumulation={name: name})):
            assert b.judge == "deterministic" and f"declared accumulation_dtype in {name}" in b.tier_off


def test_undrawn_inputs_are_not_said_to_be_kept_off_by_a_declaration() -> None:
    x, w, _ = _case(torch.float16)
    with bounds.declared(Arithmetic(eps={"fp16": "fp32"})):
        b = bounds.rmsnorm(x, w, EPS, torch.float16)
    assert b.prob is None and b.tier_off == ""


def test_the_footer_says_which_tier_judged_each_result_and_which_declaration_kept_the_sharp_one_off() -> None:
    from properties.library.assertions import TIER_OFF
    from properties.running.findings import tier_line
    from properties.running.runner import LawResult

    off = "declared eps_dtype in fp16: not in the tier's model"
    results = [
        LawResult("RMSNorm.rmsnorm_matches_golden", "RMSNorm", "fp32", "cpu", "passed", tier="probabilistic"),
        LawResult(
            "RMSNorm.rmsnorm_matches_golden",
            "RMSNorm",
            "fp16",
            "cpu",
            "passed",
            tier="deterministic",
            measurements={TIER_OFF: off},
        ),
        LawResult("RMSNorm.rmsnorm_is_scale_invariant", "RMSNorm", "fp16", "cpu", "failed", tier="deterministic"),
        LawResult("Block.block_jacobian_is_identity_plus_branch", "Block", "fp32", "cpu", "passed", tier="empirical"),
        LawResult("RMSNorm.rmsnorm_preserves_sign", "RMSNorm", "fp32", "cpu", "passed"),
        LawResult("SwiGLU.swiglu_matches_golden", "SwiGLU", "fp32", "cpu", "skipped"),
    ]
    assert tier_line(results) == (
        f"tiers: 1 probabilistic, 1 empirical, 2 deterministic (1 by declaration: {off}), "
        "1 exact or bitwise (no rounding bound)"
    )
    assert results[0].to_json()["tier"] == "probabilistic" and results[4].to_json()["tier"] is None
