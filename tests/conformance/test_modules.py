"""The course's named tests (``properties/conformance/test_modules.py``, collected here too), and proof that each
one fails on the course mistake it is named after (properties/gallery/):

    pytest tests/conformance/test_modules.py --impl some.module -k "rmsnorm or swiglu" -v
"""

import pytest
import torch

from properties.conformance.test_modules import COURSE, TestAddRMSNorm, TestRMSNorm, TestSwiGLU
from properties.running.loading import load
from properties.running.runner import LAWS, run_law


@pytest.mark.parametrize(
    ("course_test", "mistake"),
    [
        ("test_rmsnorm_does_not_center", "mean_subtraction"),
        ("test_rmsnorm_produces_unit_rms", "wrong_axis"),
        ("test_rmsnorm_scales_with_gamma", "forgot_gamma"),
        ("test_rmsnorm_matches_reference", "bf16_accumulation"),
        ("test_swiglu_matches_reference", "swapped_gate_up"),
        ("test_swiglu_gates_with_silu_elementwise", "gelu_instead_of_silu"),
        ("test_add_rmsnorm_keeps_the_sum_on_the_stream", "add_norm_normalized_stream"),
    ],
)
def test_each_course_test_fails_on_its_course_mistake(course_test, mistake):
    law_id = COURSE[course_test]
    dtype = torch.bfloat16 if mistake in ("bf16_accumulation", "gelu_instead_of_silu") else torch.float32
    result = run_law(LAWS[law_id], load(f"properties.gallery.{mistake}"), dtype=dtype, profile="ci")
    assert result.status == "failed", f"{course_test} did not catch {mistake}: {result.status} {result.message}"
    assert result.cause == "law", f"{course_test} failed {mistake} for another reason: {result.message}"


def test_every_course_test_runs_a_law_in_every_dtype_of_that_law():
    """No course test is parametrized over a dtype its law does not define (such a test could only skip)."""
    for name, law_id in COURSE.items():
        marks = getattr(TestRMSNorm, name, None) or getattr(TestSwiGLU, name, None) or getattr(TestAddRMSNorm, name)
        (param,) = [m for m in marks.pytestmark if m.name == "parametrize"]
        assert [p.values[0] for p in param.args[1]] == list(LAWS[law_id].dtypes), name
