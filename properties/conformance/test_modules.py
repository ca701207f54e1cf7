"""The course's named tests (week 6), run against the selected implementation:

    pytest --pyargs properties.conformance.test_modules --impl some.module -k "rmsnorm or swiglu" -v

Each test runs a law of the library (properties/library/laws/) in every dtype the law is defined for
(``tests/conformance/test_modules.py`` shows that each one fails on the course mistake it is named after).
"""

import pytest
import torch

from golden.formats import fmt
from properties.running.runner import LAWS

COURSE = {  # course test name → the law it runs
    "test_rmsnorm_does_not_center": "RMSNorm.rmsnorm_does_not_center",
    "test_rmsnorm_produces_unit_rms": "RMSNorm.rmsnorm_output_has_norm_sqrt_d",
    "test_rmsnorm_scales_with_gamma": "RMSNorm.rmsnorm_scales_with_gamma",
    "test_rmsnorm_matches_reference": "RMSNorm.rmsnorm_matches_golden",
    "test_swiglu_matches_reference": "SwiGLU.swiglu_matches_golden",
    "test_swiglu_gates_with_silu_elementwise": "SwiGLU.swiglu_is_elementwise_silu_gate",
    "test_swiglu_maps_zero_to_zero": "SwiGLU.swiglu_maps_zero_to_zero",
    "test_swiglu_has_three_matrices_of_ffn_dim": "SwiGLU.swiglu_has_three_matrices_of_ffn_dim",
    "test_add_rmsnorm_keeps_the_sum_on_the_stream": "AddRMSNorm.add_rmsnorm_matches_golden",
}
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[pytest.mark.nanolm_cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")],
    ),
]


def where(name: str) -> pytest.MarkDecorator:
    """Parametrize a course test over the dtypes its law is defined for (no test that can only skip)."""
    dtypes = LAWS[COURSE[name]].dtypes
    return pytest.mark.parametrize("dtype", [pytest.param(d, id=fmt(d).name) for d in dtypes])


@pytest.mark.parametrize("device", DEVICES)
class TestRMSNorm:
    @where("test_rmsnorm_does_not_center")
    def test_rmsnorm_does_not_center(self, nanolm_law_runner, dtype, device):
        """RMSNorm keeps the mean: on a row of non-zero mean it is not LayerNorm without a bias."""
        nanolm_law_runner(COURSE["test_rmsnorm_does_not_center"], dtype, device)

    @where("test_rmsnorm_produces_unit_rms")
    def test_rmsnorm_produces_unit_rms(self, nanolm_law_runner, dtype, device):
        """With γ = 1 every row of the output has RMS √(ms/(ms+eps)) ≈ 1: ‖y‖ = √D (per row, not per slab)."""
        nanolm_law_runner(COURSE["test_rmsnorm_produces_unit_rms"], dtype, device)

    @where("test_rmsnorm_scales_with_gamma")
    def test_rmsnorm_scales_with_gamma(self, nanolm_law_runner, dtype, device):
        """The output is linear in γ: y(x; γ) = γ ⊙ y(x; 1), with random γ (positive, negative, zero)."""
        nanolm_law_runner(COURSE["test_rmsnorm_scales_with_gamma"], dtype, device)

    @where("test_rmsnorm_matches_reference")
    def test_rmsnorm_matches_reference(self, nanolm_law_runner, dtype, device):
        """Within the derived bound of the golden (mpmath) value, in ULPs of the dtype."""
        nanolm_law_runner(COURSE["test_rmsnorm_matches_reference"], dtype, device)


@pytest.mark.parametrize("device", DEVICES)
class TestSwiGLU:
    @where("test_swiglu_matches_reference")
    def test_swiglu_matches_reference(self, nanolm_law_runner, dtype, device):
        """W_down(silu(W_gate x) ⊙ W_up x) within the derived bound of the golden value."""
        nanolm_law_runner(COURSE["test_swiglu_matches_reference"], dtype, device)

    @where("test_swiglu_gates_with_silu_elementwise")
    def test_swiglu_gates_with_silu_elementwise(self, nanolm_law_runner, dtype, device):
        """With identity weights (F = D = 1) the output is silu(x)·x for every finite 16-bit value."""
        nanolm_law_runner(COURSE["test_swiglu_gates_with_silu_elementwise"], dtype, device)

    @where("test_swiglu_maps_zero_to_zero")
    def test_swiglu_maps_zero_to_zero(self, nanolm_law_runner, dtype, device):
        """SwiGLU(0) = 0 exactly for any weights."""
        nanolm_law_runner(COURSE["test_swiglu_maps_zero_to_zero"], dtype, device)

    @where("test_swiglu_has_three_matrices_of_ffn_dim")
    def test_swiglu_has_three_matrices_of_ffn_dim(self, nanolm_law_runner, dtype, device):
        """Three bias-free matrices of F = ffn_dim hidden units: 3·D·F parameters."""
        nanolm_law_runner(COURSE["test_swiglu_has_three_matrices_of_ffn_dim"], dtype, device)


@pytest.mark.parametrize("device", DEVICES)
class TestAddRMSNorm:
    @where("test_add_rmsnorm_keeps_the_sum_on_the_stream")
    def test_add_rmsnorm_keeps_the_sum_on_the_stream(self, nanolm_law_runner, dtype, device):
        """The stream carries x + r itself, not its normalised value (the course's pre-norm mistake), and y is the
        norm of that sum, within the derived bound of the golden value."""
        nanolm_law_runner(COURSE["test_add_rmsnorm_keeps_the_sum_on_the_stream"], dtype, device)
