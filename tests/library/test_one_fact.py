"""One fact in one place at the seams between the layers: the compute-dtype policy (the core's default, a declaration
over it, used by the bounds and the domain law alike), the one holder of a golden value's parts and the one
tensor → float64 conversion."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import golden
from golden.dd import DD
from golden.formats import FORMATS
from nanolm_core._checks import upcast_dtype
from properties.library import strategies as S
from properties.library.assertions import as_f64, golden_f64
from properties.numerics import bounds, ulp


@pytest.mark.parametrize("f", FORMATS, ids=str)
def test_the_bounds_compute_in_the_cores_dtype_unless_a_declaration_says_otherwise(f):
    assert bounds.compute_dtype(f.dtype) == upcast_dtype(f.dtype)
    with bounds.declared(bounds.Arithmetic(compute={f.name: "fp32"})):
        assert bounds.compute_dtype(f.dtype) == torch.float32


def test_the_domain_law_takes_its_threshold_from_the_bounds_and_honours_a_declaration():
    fp64 = S.overflow_threshold(64, torch.float64)
    assert fp64 == bounds.sum_of_squares_limit(64, torch.float64) > 1e300
    with bounds.declared(bounds.Arithmetic(compute={"fp64": "fp32"})):  # HF: fp64 input computed in fp32
        assert S.overflow_threshold(64, torch.float64) == S.overflow_threshold(64, torch.float32) < 1e39
    x = torch.full((2, 64), 1.0, dtype=torch.float64) * torch.tensor([[1.0], [4.0]]) * (fp64 / 64) ** 0.5 / 2
    with np.errstate(over="ignore"):  # Σx² at ¼ and 4 × the limit: the second overflows float64 itself
        b = bounds.rmsnorm(x, torch.ones(64, dtype=torch.float64), 1e-6, torch.float64)
    assert np.asarray(b.overflow).any(axis=-1).tolist() == [False, True]


def test_fp16_rows_cannot_reach_the_fp32_threshold_but_can_reach_a_declared_fp16_one():
    assert not S.reaches_threshold(4096, torch.float16) and S.reaches_threshold(4096, torch.bfloat16)
    with bounds.declared(bounds.Arithmetic(compute={"fp16": "fp16"})):
        assert S.reaches_threshold(4096, torch.float16)


def test_a_golden_value_and_a_tensor_give_their_parts_in_the_one_holder():
    x = torch.tensor([[0.1, -2.0, 3.0]], dtype=torch.bfloat16)
    g = golden.rmsnorm(x, torch.ones(3, dtype=torch.bfloat16), 1e-6)
    parts = golden_f64(g)
    assert isinstance(parts, DD) and parts is not g and np.array_equal(parts.hi, g.hi) and parts.lo is not None
    hi, lo = golden_f64(x)  # a plain tensor: its exact values, lo = 0
    assert isinstance(golden_f64(x), DD) and np.array_equal(hi, [[0.10009765625, -2.0, 3.0]]) and not lo.any()
    assert golden_f64 is ulp.golden_parts and as_f64 is ulp.as_f64  # the assertions re-use the one definition


def test_the_one_conversion_is_exact_and_leaves_the_tensor_alone():
    x = torch.tensor([1 / 3, 1e-40], dtype=torch.float32, requires_grad=True)
    out = as_f64(x)
    assert out.dtype == np.float64 and out.tolist() == [float(np.float32(1 / 3)), float(np.float32(1e-40))]
    out[0] = 7.0
    assert x[0].item() != 7.0  # a copy: the caller's tensor is not modified
