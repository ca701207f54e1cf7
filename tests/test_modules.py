"""The course's named tests (week 6), run against the selected implementation:

    NANOLM_IMPL=some.module pytest tests/test_modules.py -k "rmsnorm or swiglu" -v

Each test runs a law of the library (properties/laws/) in every dtype; the last tests show that each
one fails on the course mistake it is named after (the wrong modules live in properties/gallery/).
"""

import pytest
import torch

from properties.impl import load
from properties.registry import LAWS, dtype_name, run_law

DTYPES = [pytest.param(d, id=dtype_name(d)) for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16)]
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
class TestRMSNorm:
    def test_rmsnorm_does_not_center(self, law_runner, dtype, device):
        """RMSNorm keeps the mean: on a row of non-zero mean it is not LayerNorm without a bias."""
        law_runner("RMSNorm.rmsnorm_does_not_center", dtype, device)

    def test_rmsnorm_produces_unit_rms(self, law_runner, dtype, device):
        """With γ = 1 every row of the output has RMS √(ms/(ms+eps)) ≈ 1: ‖y‖ = √D (per row, not per slab)."""
        law_runner("RMSNorm.rmsnorm_output_has_norm_sqrt_d", dtype, device)

    def test_rmsnorm_scales_with_gamma(self, law_runner, dtype, device):
        """The output is linear in γ: y(x; γ) = γ ⊙ y(x; 1), with random γ (positive, negative, zero)."""
        law_runner("RMSNorm.rmsnorm_scales_with_gamma", dtype, device)

    def test_rmsnorm_matches_reference(self, law_runner, dtype, device):
        """Within the derived bound of the golden (mpmath) value, in ULPs of the dtype."""
        law_runner("RMSNorm.rmsnorm_matches_golden", dtype, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
class TestSwiGLU:
    def test_swiglu_matches_reference(self, law_runner, dtype, device):
        """W_down(silu(W_gate x) ⊙ W_up x) within the derived bound of the golden value."""
        law_runner("SwiGLU.swiglu_matches_golden", dtype, device)

    def test_swiglu_gates_with_silu_elementwise(self, law_runner, dtype, device):
        """With identity weights (F = D) the output is silu(x)·x per element."""
        law_runner("SwiGLU.swiglu_is_elementwise_silu_gate", dtype, device)

    def test_swiglu_maps_zero_to_zero(self, law_runner, dtype, device):
        law_runner("SwiGLU.swiglu_maps_zero_to_zero", dtype, device)

    def test_swiglu_has_three_matrices_of_ffn_dim(self, law_runner, dtype, device):
        law_runner("SwiGLU.swiglu_has_three_matrices_of_ffn_dim", dtype, device)


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
