"""The course's named tests (week 6), run against the selected implementation:

    NANOLM_IMPL=some.module pytest tests/test_modules.py -k "rmsnorm or swiglu" -v

Each test runs a law of the library (properties/laws/) in every dtype; the last tests show that each
one fails on the course mistake it is named after (the wrong modules live in properties/gallery/).
"""

import pytest
import torch

from properties import profiles
from properties.impl import load
from properties.registry import LAWS, dtype_name, run_law

DTYPES = [pytest.param(d, id=dtype_name(d)) for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16)]
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")),
]


def check(law_id: str, impl, dtype: torch.dtype, device: str = "cpu") -> None:
    """Run one law as a pytest test: failed → fail with the law's message, skipped → skip with its reason."""
    result = run_law(LAWS[law_id], impl, dtype=dtype, device=device, profile=profiles.resolve().name)
    if result.status == "skipped":
        pytest.skip(result.message)
    if result.status != "passed":
        pytest.fail(f"{law_id} [{result.status}]: {result.message}", pytrace=False)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
class TestRMSNorm:
    def test_rmsnorm_does_not_center(self, impl, dtype, device):
        """RMSNorm keeps the mean: on a row of non-zero mean it is not LayerNorm without a bias."""
        check("RMSNorm.rmsnorm_does_not_center", impl, dtype, device)

    def test_rmsnorm_produces_unit_rms(self, impl, dtype, device):
        """With γ = 1 every row of the output has RMS √(ms/(ms+eps)) ≈ 1: ‖y‖ = √D (per row, not per slab)."""
        check("RMSNorm.rmsnorm_output_has_norm_sqrt_d", impl, dtype, device)

    def test_rmsnorm_scales_with_gamma(self, impl, dtype, device):
        """The output is linear in γ: y(x; γ) = γ ⊙ y(x; 1), with random γ (positive, negative, zero)."""
        check("RMSNorm.rmsnorm_scales_with_gamma", impl, dtype, device)

    def test_rmsnorm_matches_reference(self, impl, dtype, device):
        """Within the derived bound of the golden (mpmath) value, in ULPs of the dtype."""
        check("RMSNorm.rmsnorm_matches_golden", impl, dtype, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
class TestSwiGLU:
    def test_swiglu_matches_reference(self, impl, dtype, device):
        """W_down(silu(W_gate x) ⊙ W_up x) within the derived bound of the golden value."""
        check("SwiGLU.swiglu_matches_golden", impl, dtype, device)

    def test_swiglu_gates_with_silu_elementwise(self, impl, dtype, device):
        """With identity weights (F = D) the output is silu(x)·x per element."""
        check("SwiGLU.swiglu_is_elementwise_silu_gate", impl, dtype, device)

    def test_swiglu_maps_zero_to_zero(self, impl, dtype, device):
        check("SwiGLU.swiglu_maps_zero_to_zero", impl, dtype, device)

    def test_swiglu_has_three_matrices_of_ffn_dim(self, impl, dtype, device):
        check("SwiGLU.swiglu_has_three_matrices_of_ffn_dim", impl, dtype, device)


@pytest.mark.parametrize(
    ("course_test", "law_id", "mistake"),
    [
        ("test_rmsnorm_does_not_center", "RMSNorm.rmsnorm_does_not_center", "mean_subtraction"),
        ("test_rmsnorm_produces_unit_rms", "RMSNorm.rmsnorm_output_has_norm_sqrt_d", "wrong_axis"),
        ("test_rmsnorm_scales_with_gamma", "RMSNorm.rmsnorm_scales_with_gamma", "forgot_gamma"),
        ("test_rmsnorm_matches_reference", "RMSNorm.rmsnorm_matches_golden", "bf16_accumulation"),
        ("test_swiglu_matches_reference", "SwiGLU.swiglu_matches_golden", "swapped_gate_up"),
        ("test_swiglu_gates_with_silu_elementwise", "SwiGLU.swiglu_is_elementwise_silu_gate", "gelu_instead_of_silu"),
    ],
)
def test_each_course_test_fails_on_its_course_mistake(course_test, law_id, mistake):
    wrong = load(f"properties.gallery.{mistake}")
    dtype = torch.bfloat16 if mistake in ("bf16_accumulation", "gelu_instead_of_silu") else torch.float32
    result = run_law(LAWS[law_id], wrong, dtype=dtype, profile="ci")
    assert result.status == "failed", f"{course_test} did not catch {mistake}: {result.status} {result.message}"
