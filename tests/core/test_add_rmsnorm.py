"""The reference AddRMSNorm: (y, h) = (RMSNorm(x + r), x + r), h rounded once, inputs untouched, bad input named."""

import pytest
import torch

from nanolm_core import AddRMSNorm, RMSNorm

D = 16
DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


def _pair(dtype, shape=(3, D), seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 0.1).to(dtype)  # a small branch update …
    r = (torch.randn(shape, generator=g, dtype=torch.float64) * 8 + 1).to(dtype)  # … on a larger stream
    return x, r


@pytest.mark.parametrize("dtype", DTYPES)
def test_h_is_the_sum_rounded_once_and_y_is_rmsnorm_of_h(dtype):
    x, r = _pair(dtype)
    norm = AddRMSNorm(D, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(-1.5, 2.0, D))
    y, h = norm(x, r)
    assert torch.equal(h, (x.double() + r.double()).to(dtype))  # fp64 sum of two narrower values, rounded once
    plain = RMSNorm(D, eps=1e-5)
    plain.load_state_dict(norm.state_dict())
    assert torch.equal(y, plain(h))  # the unfused order: the norm reads the rounded h
    assert (y.dtype, h.dtype, y.shape, h.shape) == (dtype, dtype, x.shape, x.shape)


def test_the_parameter_is_weight_of_ones_and_the_state_dict_is_rmsnorms():
    norm = AddRMSNorm(8)
    assert list(norm.state_dict()) == ["weight"] and torch.equal(norm.weight, torch.ones(8))
    assert (norm.dim, norm.eps) == (8, 1e-6)


def test_inputs_are_not_modified_and_outputs_are_new_tensors():
    x, r = _pair(torch.float32, shape=(2, 3, D))
    x0, r0 = x.clone(), r.clone()
    y, h = AddRMSNorm(D)(x, r)
    assert torch.equal(x, x0) and torch.equal(r, r0)
    pointers = {t.untyped_storage().data_ptr() for t in (x, r, y, h)}
    assert len(pointers) == 4


def test_gradients_flow_to_both_inputs_and_are_equal():
    x, r = (t.requires_grad_(True) for t in _pair(torch.float64))
    y, h = AddRMSNorm(D)(x, r)
    (y.sum() + 2 * h.sum()).backward()
    assert torch.equal(x.grad, r.grad)


@pytest.mark.parametrize(
    ("residual", "error", "message"),
    [
        (torch.zeros(3, D + 1), ValueError, r"AddRMSNorm: residual has shape \(3, 17\), x has \(3, 16\)"),
        (torch.zeros(1, D), ValueError, r"AddRMSNorm: residual has shape \(1, 16\), x has \(3, 16\)"),
        (torch.zeros(3, D, dtype=torch.float64), TypeError, "AddRMSNorm: residual has dtype torch.float64"),
        ([[0.0] * D], TypeError, "AddRMSNorm: expected a torch.Tensor, got list for residual"),
        (torch.zeros(3, D, device="meta"), ValueError, "AddRMSNorm: residual is on meta, x is on cpu"),
    ],
)
def test_a_bad_residual_is_named(residual, error, message):
    with pytest.raises(error, match=message):
        AddRMSNorm(D)(torch.zeros(3, D), residual)


def test_a_bad_x_and_bad_constructor_arguments_are_named():
    with pytest.raises(ValueError, match=r"AddRMSNorm: last dimension of input shape \(3, 15\) must be dim=16"):
        AddRMSNorm(D)(torch.zeros(3, 15), torch.zeros(3, 15))
    with pytest.raises(TypeError, match="AddRMSNorm: dtype torch.int64 is not supported for x"):
        AddRMSNorm(D)(torch.zeros(3, D, dtype=torch.int64), torch.zeros(3, D))
    with pytest.raises(ValueError, match=r"AddRMSNorm: dim=0 must be a positive int"):
        AddRMSNorm(0)
    with pytest.raises(ValueError, match="AddRMSNorm: eps=-1 must be finite and ≥ 0"):
        AddRMSNorm(D, eps=-1)
