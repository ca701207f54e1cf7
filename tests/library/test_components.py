"""The component records (``properties.library.components``): one record per component, read generically.

Each record's golden value, bounds and gradients are checked against the component-specific functions they stand
for (the same numbers), its build/call against the reference implementation (the reference passes; a module that
returns the wrong number of outputs is a contract failure), and the registry's surface: light import, ordered
names, a clear error for an unknown name, a throwaway component added and removed.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import golden
from properties.library import components
from properties.library.context import LawFailure
from properties.library.subject import COMPONENTS, Implementation
from properties.numerics import bounds

CONTRACT = ("RMSNorm", "SwiGLU", "Block", "AddRMSNorm")


def test_the_records_are_the_contracts_components_in_order():
    assert components.names() == CONTRACT
    assert COMPONENTS == CONTRACT  # subject's tuple is read from the records
    for name, rec in components.RECORDS.items():
        assert rec.name == name and rec.signature.startswith(f"{name}(")
        assert rec.inputs[0] == "x" and rec.outputs and rec.params
    from properties.library import matrix

    axes = {a.key for a in matrix.axes()}
    for name, rec in components.RECORDS.items():
        assert set(rec.not_applicable) <= axes, name  # a reason names an axis of the matrix


def test_an_unknown_component_is_a_clear_error():
    with pytest.raises(ValueError, match=r"unknown component 'LayerNorm'; expected one of RMSNorm, SwiGLU"):
        components.record("LayerNorm")


def test_importing_the_records_and_their_names_imports_nothing_heavy():
    code = (
        "import sys, properties.library.components as c; c.names(); c.record('AddRMSNorm'); "
        "print(sorted(m for m in ('torch', 'hypothesis', 'numpy', 'golden') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_register_adds_and_unregister_removes_a_component():
    throwaway = dataclasses.replace(components.record("RMSNorm"), name="ScaledRMSNorm")
    components.register(throwaway)
    try:
        assert components.names() == (*CONTRACT, "ScaledRMSNorm")
        with pytest.raises(ValueError, match="already registered"):
            components.register(throwaway)
    finally:
        components.unregister("ScaledRMSNorm")
    assert components.names() == CONTRACT


def test_the_conventions_read_the_references_arithmetic_from_the_record():
    """The reference's compute dtypes and whether its rows are batch-invariant on the CPU are record data
    (``compute``, ``batch_invariant_on_cpu``): a record that says otherwise changes what an undeclared component's
    conventions assume — conventions.py names no component."""
    from properties.library.conventions import parse

    module_dtype = {"fp64": "fp64", "fp32": "fp32", "fp16": "fp16", "bf16": "bf16"}
    plain = dataclasses.replace(
        components.record("RMSNorm"), name="PlainNorm", compute=module_dtype, batch_invariant_on_cpu=""
    )
    components.register(plain)
    try:
        assert parse("PlainNorm", None).compute("bf16") == "bf16"
        assert not parse("PlainNorm", None).batch_invariance("fp32", "cpu")
        assert parse("PlainNorm", {"batch_invariant": True}).batch_invariance("fp32", "cpu")
    finally:
        components.unregister("PlainNorm")
    rms = parse("RMSNorm", None)
    assert rms.compute("bf16") == "fp32" and rms.batch_invariance("fp32", "cpu")
    assert not rms.batch_invariance("fp32", "cuda:0")
    source = (Path(__file__).resolve().parents[2] / "properties/library/conventions.py").read_text(encoding="utf-8")
    assert not [n for n in CONTRACT if f'"{n}"' in source]


def test_snake_names_match_the_law_ids_spelling():
    assert [components.record(n).snake for n in CONTRACT] == ["rmsnorm", "swiglu", "block", "add_rmsnorm"]


# ---------------------------------------------------------------------------------------------- drawn cases


@pytest.mark.parametrize("name", CONTRACT)
def test_drawn_cases_have_the_records_inputs_params_and_at_least_the_rows_asked(name):
    rec = components.record(name)

    @settings(max_examples=4, deadline=None, database=None)
    @given(case=rec.cases(torch.float32, min_rows=2, max_dim=16))
    def check(case: components.Case) -> None:
        assert case.component == name
        assert len(case.inputs) == len(rec.inputs)
        assert set(case.params) == set(rec.params)
        x = case.inputs[0]
        assert all(t.shape == x.shape for t in case.inputs)
        assert x.dtype == torch.float32 and x.numel() // x.shape[-1] >= 2
        assert case.describe()["shape"] == tuple(x.shape)

    check()


# ---------------------------------------------------------------------------------------------- golden and bounds


def _rmsnorm_case(dtype=torch.float32):
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((3, 8))).to(dtype)
    w = torch.from_numpy(rng.uniform(0.5, 1.5, 8)).to(dtype)
    return components.record("RMSNorm").case((x,), {"weight": w}, eps=1e-5), x, w


def test_rmsnorm_record_is_the_rmsnorm_functions():
    case, x, w = _rmsnorm_case()
    rec = components.record("RMSNorm")
    assert case.args == (8,) and case.kwargs == {"eps": 1e-5}
    (g,) = rec.golden(case)
    np.testing.assert_array_equal(g.hi, golden.rmsnorm(x, w, 1e-5).hi)
    (b,) = rec.bounds(case, torch.bfloat16)
    np.testing.assert_array_equal(b.abs, bounds.rmsnorm(x, w, 1e-5, torch.bfloat16).abs)
    gy = torch.ones_like(x)
    vjp = rec.vjp(case, (gy,), torch.float32)
    dx, dw = golden.rmsnorm_vjp(x, w, 1e-5, gy)
    np.testing.assert_array_equal(vjp["x"][0].hi, dx.hi)
    np.testing.assert_array_equal(vjp["weight"][0].hi, dw.hi)
    assert set(rec.golden_vjp(case, (gy,))) == {"x", "weight"}


def test_add_rmsnorm_record_gives_both_outputs_and_one_gradient_for_x_and_the_residual():
    rec = components.record("AddRMSNorm")
    rng = np.random.default_rng(1)
    x, r = (torch.from_numpy(rng.standard_normal((2, 8))).float() for _ in range(2))
    w = torch.ones(8)
    case = rec.case((x, r), {"weight": w}, eps=1e-6)
    gy, gh = rec.golden(case)
    ey, eh = golden.add_rmsnorm(x, r, w, 1e-6)
    np.testing.assert_array_equal(gy.hi, ey.hi)
    np.testing.assert_array_equal(gh.hi, eh.hi)
    assert len(rec.bounds(case, torch.float32)) == 2
    # a None cotangent is a zero one: h unused
    grads = rec.golden_vjp(case, (torch.ones_like(x), None))
    d, dw = golden.add_rmsnorm_vjp(x, r, w, 1e-6, torch.ones_like(x), torch.zeros_like(x))
    np.testing.assert_array_equal(grads["x"].hi, d.hi)
    np.testing.assert_array_equal(grads["residual"].hi, d.hi)
    np.testing.assert_array_equal(grads["weight"].hi, dw.hi)
    with pytest.raises(ValueError, match="1 cotangents for the outputs"):
        rec.golden_vjp(case, (torch.ones_like(x),))


def test_the_block_has_no_golden_vjp_but_the_reference_derivative():
    rec = components.record("Block")
    assert rec.golden_vjp_of is None
    from properties.library import strategies as S

    config = S.fixed_config(2, 1, 4, F=8, max_seq_len=4)
    params = S.block_params(config, torch.float32, seed=3)
    x = torch.from_numpy(np.random.default_rng(2).standard_normal((1, 3, config.dim))).float()
    case = rec.case((x,), params, config=config)
    assert rec.golden_vjp(case, (torch.ones_like(x),)) is None
    vjp = rec.vjp(case, (torch.ones_like(x),), torch.float32)
    assert set(vjp) == {"x", *rec.params}
    exact, b = vjp["x"]
    assert np.asarray(exact).dtype == np.float64 and np.isfinite(b.abs).all()


# ---------------------------------------------------------------------------------------------- build and call


def _impl(**members) -> Implementation:
    import types

    return Implementation("test", types.SimpleNamespace(**members))


def test_forward_builds_and_calls_the_reference_and_returns_a_tuple():
    import nanolm_core

    impl = Implementation("nanolm_core", nanolm_core)
    case, x, w = _rmsnorm_case()
    (y,) = components.record("RMSNorm").forward(impl, case, torch.float32, "cpu")
    expected = golden.rmsnorm(x, w, 1e-5).rounded(torch.float32)
    assert torch.allclose(y, torch.as_tensor(expected), atol=1e-6)
    rec = components.record("AddRMSNorm")
    r = torch.ones_like(x)
    y, h = rec.forward(impl, rec.case((x, r), {"weight": w}, eps=1e-5), torch.float32, "cpu")
    assert torch.equal(h, x + r)


def test_a_module_returning_one_output_where_the_record_has_two_is_a_contract_failure():
    class OnlyY(torch.nn.Module):
        def __init__(self, dim: int, eps: float = 1e-6) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(dim))

        def forward(self, x, residual):
            return x + residual

    rec = components.record("AddRMSNorm")
    x = torch.ones(2, 4)
    case = rec.case((x, x), {"weight": torch.ones(4)}, eps=1e-6)
    with pytest.raises(LawFailure, match=r"AddRMSNorm.forward returned Tensor, not the tuple \(y, h\)"):
        rec.forward(_impl(AddRMSNorm=OnlyY), case, torch.float32, "cpu")


def test_an_output_of_another_shape_fails_with_the_cause_asked():
    class Wide(torch.nn.Module):
        def __init__(self, dim: int, eps: float = 1e-6) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return torch.cat([x, x], -1)

    case, _, _ = _rmsnorm_case()
    with pytest.raises(LawFailure, match=r"RMSNorm output: shape \(3, 16\)") as info:
        components.record("RMSNorm").forward(_impl(RMSNorm=Wide), case, torch.float32, "cpu", output_cause="law")
    assert info.value.cause == "law"


@given(st.sampled_from(CONTRACT))
@settings(max_examples=4, deadline=None, database=None)
def test_every_record_names_its_drop_ins(name):
    rec = components.record(name)
    assert rec.dropin() == f"assert_{rec.snake}_close"
    assert rec.dropin("grads_close") == f"assert_{rec.snake}_grads_close"
    assert rec.terms[0] == "x" and rec.from_terms is not None
