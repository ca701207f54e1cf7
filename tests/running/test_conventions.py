"""Declared conventions: the vocabulary is validated (a misspelt key is a usage error, not ignored), parsed into
data the laws can read, and printed in ``check``'s header."""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import nanolm_core
from golden.formats import NAMES
from properties.entry.cli import main
from properties.gallery import eps_outside_sqrt, gemma_offset_twice, missing_eps
from properties.library.context import LawContext, open_context
from properties.library.conventions import NOT_MODELLED, ConventionError, Conventions, parse, parse_all, written
from properties.library.subject import Implementation
from properties.numerics import bounds
from properties.running.loading import ADAPTERS, ImplementationError, load
from properties.running.runner import LAWS, run_check, run_law
from tests.correct_impls import declared


def test_a_declaration_is_parsed_into_typed_values():
    c = parse(
        "RMSNorm",
        {
            "compute_dtype": {"fp64": "fp32", "bf16": "float32"},
            "eps_dtype": "bf16",
            "eps_placement": "inside the square root",
            "flush_subnormals": ["output"],
            "weight_offset": 1,
            "roundings": 2,
            "reduction": "pairwise",
            "accumulation_dtype": "compute",
            "dtypes": ["fp32", torch.bfloat16],
            "formula": "y = …",
        },
    )
    assert c.compute(torch.float64) == "fp32" and c.compute("fp16") == "fp32" and c.compute("fp32") == "fp32"
    assert (c.eps_dtype, c.eps_placement) == ("bf16", "inside")
    assert c.flushes("fp16") == frozenset({"output"}) and c.flush_subnormals == {name: {"output"} for name in NAMES}
    assert (c.weight_offset, c.roundings, c.reduction, c.accumulation_dtype) == (1.0, 2, "pairwise", "compute")
    assert c.dtypes == ("fp32", "bf16") and c.supports("bf16") and not c.supports(torch.float16)
    assert c.text == {"formula": "y = …"}
    assert c.summary() == (
        "compute fp64→fp32; eps dtype bf16; flush subnormals output; weight offset 1.0; roundings 2; "
        "reduction pairwise; accumulation dtype compute; dtypes fp32,bf16"
    )


def test_undeclared_means_the_reference_conventions():
    c = Conventions("SwiGLU")
    assert c.compute("bf16") == "bf16" and parse("RMSNorm", None).compute("bf16") == "fp32"
    assert c.summary() == "" and c.supports("fp16")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"weight_ofset": 1.0}, "unknown key (did you mean 'weight_offset'?)"),
        ({"compute_dtype": "fp8"}, "'fp8' is not a dtype"),
        ({"roundings": 3}, "expected 1"),
        ({"rope_layout": "gpt-j"}, "expected one of rotate-half, interleaved"),
        ({"flush_subnormals": ["inputs"]}, "expected True, False or any of input"),
        ({"weight_offset": "one"}, "expected a finite number"),
    ],
)
def test_a_bad_declaration_names_the_component_and_the_key(raw, message):
    with pytest.raises(ConventionError, match="CONVENTIONS\\['RMSNorm'\\]") as info:
        parse("RMSNorm", raw)
    assert message in str(info.value)


def test_a_module_with_a_bad_declaration_is_a_usage_error(tmp_path):
    mod = tmp_path / "bad_conventions.py"
    mod.write_text("from nanolm_core import RMSNorm\nCONVENTIONS = {'RMSNorm': {'compute_dtype': 'fp128'}}\n")
    with pytest.raises(ImplementationError, match="declares conventions that cannot be read"):
        load(str(mod))
    assert main(["check", str(mod), "--profile", "ci", "-q", "--workers", "1"]) == 2
    with pytest.raises(ConventionError, match="components are"):
        parse_all({"LayerNorm": {}}, ("RMSNorm",))


@pytest.mark.parametrize("adapter", [a for a in ADAPTERS if a not in ("liger", "reference")])
def test_every_shipped_adapter_declares_readable_conventions(adapter):
    impl = load(adapter)
    for component in impl.provided:
        assert impl.convention(component), f"{adapter} {component} declares nothing"
        impl.conventions[component].summary()


def test_check_prints_the_declarations_in_its_header(capsys):
    args = ["check", "hf-gemma", "--profile", "ci", "--only", "rmsnorm_preserves_sign", "--dtype", "fp32", "-q"]
    assert main([*args, "--workers", "1"]) == 0
    assert "declared RMSNorm: compute fp64→fp32; weight offset 1.0" in capsys.readouterr().out


# ------------------------------------------------------------------------ declarations the laws honour
# Each correct implementation of tests/correct_impls/declared.py fails the named law without its declaration and
# passes it with (a); a wrong implementation declaring the same still fails (b); undeclared bounds are unchanged (c).

HONOURED = [
    ("Fp32ForFp64RMSNorm", "RMSNorm.rmsnorm_matches_golden", "fp64"),
    ("Bf16EpsRMSNorm", "RMSNorm.rmsnorm_matches_golden", "fp32"),
    ("FlushingRMSNorm", "RMSNorm.rmsnorm_matches_golden", "fp32"),
    ("FlushingRMSNorm", "RMSNorm.rmsnorm_matches_golden", "fp16"),
    ("OffsetGainRMSNorm", "RMSNorm.rmsnorm_matches_stored_golden", "fp32"),  # D = 769, gains far from 1
    ("InterleavedBlock", "Block.block_matches_golden", "fp32"),
    ("Bf16SumRMSNorm", "RMSNorm.rmsnorm_matches_stored_golden", "fp32"),
]


def _subject(component: str, cls: type, declaration: dict | None) -> Implementation:
    module = types.ModuleType(f"declared_{cls.__name__}_{'with' if declaration else 'without'}")
    setattr(module, component, cls)
    if declaration is not None:
        module.CONVENTIONS = {component: declaration}
    return Implementation(module.__name__, module)


def _run(component: str, cls: type, declaration: dict | None, law_id: str, dtype: str):
    return run_law(LAWS[law_id], _subject(component, cls, declaration), dtype=dtype, profile="ci")


@pytest.mark.parametrize(("name", "law_id", "dtype"), HONOURED)
def test_a_correct_implementation_passes_with_its_declaration_and_fails_without(name, law_id, dtype):
    component, declaration = declared.DECLARATIONS[name]
    cls = getattr(declared, name)
    without = _run(component, cls, None, law_id, dtype)
    assert without.status == "failed" and without.cause == "law", without.message
    honoured = _run(component, cls, declaration, law_id, dtype)
    assert honoured.status == "passed", honoured.message
    assert honoured.declared == parse(component, declaration).summary()
    assert 0 < honoured.measurements["headroom"] <= 1  # measured, and judged at the declared precision


class Bf16ComputeRMSNorm(nanolm_core.RMSNorm):
    """WRONG for its declaration: declares fp64 computed in fp32 but computes in bf16."""

    def forward(self, x):
        return F.rms_norm(x.bfloat16(), (self.dim,), self.weight.bfloat16(), self.eps).to(x.dtype)


class Bf16GainRMSNorm(nanolm_core.RMSNorm):
    """WRONG for its declaration: declares the 1 + (γ − 1) gain but forms it in bf16, not in the compute dtype."""

    def forward(self, x):
        gain = (1.0 + (self.weight.bfloat16() - 1.0)).float()
        return F.rms_norm(x.float(), (self.dim,), gain, self.eps).to(x.dtype)


class OverflushingRMSNorm(declared.FlushingRMSNorm):
    """WRONG for its declaration: declares flushing subnormals but also zeroes the normal inputs below 16× the
    smallest normal."""

    def forward(self, x):
        return super().forward(torch.where(x.abs() < 16 * torch.finfo(x.dtype).tiny, torch.zeros_like(x), x))


POWER_KEPT = [
    ("RMSNorm", Bf16ComputeRMSNorm, {"compute_dtype": {"fp64": "fp32"}}, "RMSNorm.rmsnorm_matches_golden", "fp64"),
    ("RMSNorm", eps_outside_sqrt.RMSNorm, {"eps_dtype": "bf16"}, "RMSNorm.rmsnorm_matches_golden", "fp32"),
    ("RMSNorm", OverflushingRMSNorm, {"flush_subnormals": True}, "RMSNorm.rmsnorm_matches_golden", "fp16"),
    ("RMSNorm", Bf16GainRMSNorm, {"weight_offset": 1.0}, "RMSNorm.rmsnorm_matches_golden", "fp32"),
    ("RMSNorm", gemma_offset_twice.RMSNorm, {"weight_offset": 1.0}, "RMSNorm.rmsnorm_matches_golden", "fp32"),
    ("Block", nanolm_core.Block, {"rope_layout": "interleaved"}, "Block.block_matches_golden", "fp32"),
    ("RMSNorm", missing_eps.RMSNorm, {"accumulation_dtype": "bf16"}, "RMSNorm.rmsnorm_matches_golden", "fp32"),
]


@pytest.mark.parametrize(("component", "cls", "declaration", "law_id", "dtype"), POWER_KEPT)
def test_a_wrong_implementation_still_fails_with_the_declaration(component, cls, declaration, law_id, dtype):
    result = _run(component, cls, declaration, law_id, dtype)
    assert result.status == "failed" and result.cause == "law", result.message


def test_a_gradcheck_that_no_bound_can_model_is_an_expected_measured_result():
    component, declaration = declared.DECLARATIONS["Fp32ForFp64RMSNorm"]
    law = "RMSNorm.rmsnorm_gradients_pass_gradcheck"
    assert _run(component, declared.Fp32ForFp64RMSNorm, None, law, "fp64").status == "failed"
    result = _run(component, declared.Fp32ForFp64RMSNorm, declaration, law, "fp64")
    assert result.status == "xfailed" and result.cause == "law"
    assert result.measurements["declared"].startswith("declared compute fp64→fp32")
    # the same declaration excuses nothing else: a wrong backward still fails its golden law
    assert parse(component, declaration).excuse("RMSNorm.rmsnorm_gradients_match_golden", "fp64") is None


def _bound_arrays(make) -> list[np.ndarray]:
    out = []
    for b in make():
        out += [b.abs, b.pairwise] + ([b.ulps] if b.ulps is not None else [])
    return out


def _every_bound():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 8, generator=g, dtype=torch.float64) * 2.0 ** torch.randint(-30, 30, (3, 1), generator=g)
    w, gy = torch.randn(8, generator=g, dtype=torch.float64), torch.randn(3, 8, generator=g, dtype=torch.float64)
    wg, wu, wd = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((12, 8), (12, 8), (8, 12)))
    cfg = nanolm_core.ModelConfig(dim=8, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=16, max_seq_len=8)
    shapes = nanolm_core.Block(cfg).state_dict().items()
    params = {k: torch.randn(v.shape, generator=g, dtype=torch.float64) for k, v in shapes}
    xb = x.reshape(1, 3, 8)
    for t in NAMES:
        yield lambda t=t: (bounds.rmsnorm(x, w, 1e-6, t), *bounds.rmsnorm_vjp(x, w, 1e-6, gy, t))
        yield lambda t=t: (bounds.swiglu(x, wg, wu, wd, t), *bounds.swiglu_vjp(x, wg, wu, wd, gy, t))
        yield lambda t=t: (bounds.block(xb, params, cfg, t, random_weights=True), bounds.silu(x, t))


@pytest.mark.parametrize(
    "conventions",
    [
        Conventions("RMSNorm"),
        parse("RMSNorm", {"compute_dtype": {"fp16": "fp32", "bf16": "fp32"}, "roundings": 2, "reduction": "pairwise"}),
        parse("SwiGLU", {"compute_dtype": "input", "flush_subnormals": ["intermediate"], "eps_dtype": "compute"}),
        parse("Block", {"weight_offset": 0.0, "accumulation_dtype": "compute"}),
    ],
    ids=["undeclared", "llama-order", "module-dtype", "contract-values"],
)
def test_declarations_the_bounds_already_admit_change_no_bound(conventions):
    assert not conventions.arithmetic()  # nothing numeric departs from the contract's accepted conventions
    ctx = LawContext(
        "RMSNorm.x", conventions.component, torch.float32, "cpu", "ci", False, 0, "", conventions=conventions
    )
    for make in _every_bound():
        plain = _bound_arrays(make)
        with open_context(ctx):
            honoured = _bound_arrays(make)
        for a, b in zip(plain, honoured, strict=True):
            np.testing.assert_array_equal(a, b)


def test_the_reference_runs_with_no_declaration_and_unchanged_bounds():
    impl = load("nanolm_core")
    assert all(not c.arithmetic() and c.summary() == "" for c in impl.conventions.values())
    result = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], impl, dtype="bf16", profile="ci")
    assert result.status == "passed" and result.declared == ""


def test_a_declared_compute_dtype_is_honoured_in_one_place():
    with bounds.declared(parse("RMSNorm", {"compute_dtype": {"fp64": "fp32"}}).arithmetic()):
        assert bounds.compute_dtype(torch.float64) == torch.float32
        assert bounds.compute_dtype(torch.bfloat16) == torch.float32
    assert bounds.compute_dtype(torch.float64) == torch.float64
    with bounds.declared(parse("RMSNorm", {"compute_dtype": "input"}).arithmetic()):
        assert bounds.compute_dtype("fp16") == torch.float16  # timm: no upcast


def test_a_complete_module_of_declared_conventions_passes_every_law():
    """No false alarms under declarations: tests/correct_impls/declared_module.py (fp64 computed in fp32 everywhere,
    Gemma's gain, a bf16 eps, flushed subnormals, an interleaved RoPE) passes every law; what no bound models is
    xfailed by the declaration, with the declaration as its reason."""
    results = run_check("tests.correct_impls.declared_module", profile="ci", devices=["cpu"], seed=303)
    assert len(results) >= 100
    bad = [r for r in results if r.status not in ("passed", "skipped", "xfailed")]
    assert not bad, "\n\n".join(f"{r.law_id} [{r.dtype}] {r.status}:\n{r.message}" for r in bad)
    excused = {(r.law_id, r.dtype) for r in results if r.status == "xfailed"}
    assert excused <= {(law, "fp64") for law in LAWS if law.endswith(tuple(NOT_MODELLED))}
    assert all(
        r.measurements["declared"].startswith("declared compute fp64→fp32") for r in results if r.status == "xfailed"
    )


def test_declared_dtypes_skip_the_others_with_the_declaration_as_reason():
    impl = _subject("RMSNorm", nanolm_core.RMSNorm, {"dtypes": ["fp32", "fp16"]})
    law = LAWS["RMSNorm.rmsnorm_matches_golden"]
    skipped = run_law(law, impl, dtype="bf16", profile="ci")
    assert skipped.status == "skipped" and skipped.message == "dtype not supported: RMSNorm declares dtypes fp32, fp16"
    assert run_law(law, impl, dtype="fp32", profile="ci").status == "passed"


# ------------------------------------------------------------------------ per-dtype values, batch invariance, free text


def test_declarations_per_input_dtype():
    c = parse(
        "RMSNorm",
        {
            "flush_subnormals": {"bf16": ["input", "output"]},
            "eps_dtype": {"fp64": "fp32"},
            "batch_invariant": {"fp32": False},
        },
    )
    assert c.flushes("bf16") == {"input", "output"} and c.flushes("fp32") == frozenset()
    a = c.arithmetic()
    assert a.flushes("bf16") == {"input", "output"} and not a.flushes("fp16")
    assert a.eps == {"fp64": "fp32"}
    assert not c.batch_invariance("fp32", "cpu") and c.batch_invariance("bf16", "cpu")
    assert c.departing("bf16") == ("flush_subnormals",) and c.departing("fp64") == ("eps_dtype",)
    assert c.summary() == "eps dtype fp64: fp32; flush subnormals bf16: input,output; batch invariant fp32: False"
    assert c.without("eps_dtype", "fp64").arithmetic().eps == {}


def test_a_uniform_declaration_reads_as_one_value():
    c = parse("RMSNorm", {"flush_subnormals": True, "batch_invariant": False, "compute_dtype": "input"})
    assert c.declared == {
        "compute_dtype": "input",
        "flush_subnormals": ["input", "intermediate", "output"],
        "batch_invariant": False,
    }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"batch_invariant": "yes"}, "expected True or False (or one per input dtype"),
        ({"flush_subnormals": {"bf16": ["inputs"]}}, "(or one of these per input dtype"),
        ({"flush_subnormals": {"bf17": True}}, "'bf17' is not a dtype"),
        ({"compute_dtype": "fp32 for the norm, fp64 otherwise"}, "free text goes under the description key 'compute'"),
        ({"rope_layout": "the interleaved one from Meta"}, "free text goes under the description key 'rope'"),
        ({"eps_dtype": "stored as a float attribute"}, "free text goes under the description key 'notes'"),
    ],
)
def test_a_bad_per_dtype_or_free_text_value_says_what_to_write(raw, message):
    with pytest.raises(ConventionError) as info:
        parse("RMSNorm", raw)
    assert message in str(info.value)


def test_written_is_how_a_module_declares_it():
    assert written("compute_dtype", {"fp64": "fp32"}) == '`compute_dtype: {"fp64": "fp32"}`'
    assert written("batch_invariant", False) == "`batch_invariant: False`"
    assert written("flush_subnormals", {"fp16": ["input"]}) == '`flush_subnormals: {"fp16": ["input"]}`'
