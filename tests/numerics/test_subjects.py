"""Law-level proofs for the numerics: NaN is never agreement, and a bf16-accumulating SwiGLU is caught (ci profile).

``subjects/all_nan.py`` returns NaN for every value (shape, dtype, device and parameters per the contract). Every
law about values must fail it with cause "law" — including the relative laws (f(αx) vs f(x), row and token
independence, linearity, drift) and the bitwise ones (batch invariance, causality), where two NaN outputs used to
"agree". The laws about structure only (shape/dtype/device, unmodified inputs, parameter counts) pass it, rightly.
"""

from __future__ import annotations

import pytest

from golden.formats import fmt
from properties.running.loading import load
from properties.running.runner import LAWS, run_law

STRUCTURAL = {  # laws that never look at output values: an all-NaN module satisfies them
    "RMSNorm.rmsnorm_preserves_shape_dtype_device",
    "RMSNorm.rmsnorm_does_not_modify_input",
    "SwiGLU.swiglu_preserves_shape_dtype_device",
    "SwiGLU.swiglu_does_not_modify_input",
    "SwiGLU.swiglu_has_three_matrices_of_ffn_dim",
    "Block.block_preserves_shape_dtype_device",
    "Block.block_does_not_modify_input",
    "Block.block_has_llama_parameter_count",
    "Block.block_ffn_dim_is_8d_over_3",
    "AddRMSNorm.add_rmsnorm_preserves_shape_dtype_device",
    "AddRMSNorm.add_rmsnorm_outputs_are_new_tensors",
}


def _dtype(law_id: str) -> str:
    names = [fmt(d).name for d in LAWS[law_id].dtypes]
    return next(n for n in ("fp32", "bf16", "fp16", "fp64") if n in names)


ACCELERATOR = {law_id for law_id, law in LAWS.items() if "accelerator" in law.tags}  # not run on the CPU itself
IMPORT = {"Module.module_import_leaves_torch_state_unchanged"}  # about the import, not the outputs


@pytest.mark.parametrize("law_id", sorted(set(LAWS) - STRUCTURAL - ACCELERATOR - IMPORT))
def test_an_all_nan_implementation_fails_every_law_about_values(law_id: str) -> None:
    r = run_law(LAWS[law_id], load("tests.numerics.subjects.all_nan"), dtype=_dtype(law_id), device="cpu", profile="ci")
    assert (r.status, r.cause) == ("failed", "law"), f"{law_id}: {r.status} {r.cause} {r.message}"


@pytest.mark.parametrize("law_id", sorted(STRUCTURAL & set(LAWS)))
def test_an_all_nan_implementation_passes_the_laws_about_structure(law_id: str) -> None:
    r = run_law(LAWS[law_id], load("tests.numerics.subjects.all_nan"), dtype=_dtype(law_id), device="cpu", profile="ci")
    assert r.status == "passed", r.message


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp64"])
def test_nan_is_never_agreement_in_the_bitwise_and_relative_laws_in_every_dtype(dtype: str) -> None:
    impl = load("tests.numerics.subjects.all_nan")
    for law_id in ("RMSNorm.rmsnorm_is_batch_invariant", "RMSNorm.rmsnorm_is_scale_invariant", "Block.block_is_causal"):
        r = run_law(LAWS[law_id], impl, dtype=dtype, device="cpu", profile="ci")
        assert (r.status, r.cause) == ("failed", "law"), f"{law_id} [{dtype}]: {r.status} {r.message}"


def test_a_swiglu_accumulating_its_dot_products_in_bf16_is_caught() -> None:
    impl = load("tests.numerics.subjects.swiglu_bf16_accumulation")
    r = run_law(LAWS["SwiGLU.swiglu_matches_golden"], impl, dtype="bf16", device="cpu", profile="ci")
    assert (r.status, r.cause) == ("failed", "law"), r.message
    print(f"\nswiglu_bf16_accumulation: caught after {r.found_after} example(s), headroom {r.measurements}")
