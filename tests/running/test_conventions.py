"""Declared conventions: the vocabulary is validated (a misspelt key is a usage error, not ignored), parsed into
data the laws can read, and printed in ``check``'s header."""

from __future__ import annotations

import pytest
import torch

from properties.entry.cli import main
from properties.library.conventions import ConventionError, Conventions, parse, parse_all
from properties.running.loading import ADAPTERS, ImplementationError, load


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
    assert (c.eps_dtype, c.eps_placement, c.flush_subnormals) == ("bf16", "inside", frozenset({"output"}))
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
