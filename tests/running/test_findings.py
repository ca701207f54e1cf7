"""What a run finds beyond its verdicts (``properties.running.findings``) and how ``check`` shows it: declarations
the measurements did not need (a warning with the tighter declaration), batch invariance measured where it is
not required, the diagnoses of failures in the footer and the JSON; and the runner's own account of a verdict
that flipped between two runs of one example."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
import torch
import torch.nn.functional as F

import nanolm_core
from properties.entry.cli import main
from properties.gallery.batch_variant import RMSNorm as BatchVariantRMSNorm
from properties.library.conventions import parse
from properties.numerics import bounds
from properties.running import findings
from properties.running.runner import LAWS, LawResult, run_law
from tests.correct_impls.unconventional import SUBJECTS, subject

OVERDECLARED = "tests/correct_impls/overdeclared.py"
GOLDEN_LAWS = "RMSNorm.rmsnorm_matches_golden,RMSNorm.rmsnorm_matches_stored_golden"


def test_check_warns_of_a_declaration_the_measurements_did_not_need(capsys, tmp_path):
    report = tmp_path / "r.json"
    args = ["check", OVERDECLARED, "--profile", "ci", "--only", GOLDEN_LAWS, "--workers", "1", "-q"]
    assert main([*args, "--json", str(report)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the footer is wrapped at 80 columns
    assert 'warning: RMSNorm `compute_dtype: "input"` was not needed: in fp16, bf16 every law holds without it' in out
    assert "drop it (the reference's compute dtype is enough)" in out
    declarations = json.loads(report.read_text())["implementation"]["declarations"]
    compute = next(d for d in declarations if d["key"] == "compute_dtype")
    assert compute["warning"] and compute["unneeded"] == ["fp16", "bf16"] and compute["headroom_without"] <= 1


def test_a_declaration_the_measurements_needed_is_reported_not_warned():
    component, cls, declaration = SUBJECTS["fp32 arithmetic"]
    impl = subject(component, cls, declaration)
    results = [run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], impl, dtype=d, profile="ci") for d in ("fp64", "fp32")]
    [found] = findings.declarations(results, {"RMSNorm": impl.conventions["RMSNorm"]})
    assert found.needed == ("fp64",) and not found.warning
    assert found.text() == 'RMSNorm `compute_dtype: {"fp64": "fp32"}`: needed in fp64'
    assert results[0].measurements["headroom without"]["compute_dtype"] > 1  # fp32's error, fp64's bound


def _result(dtype: str, status: str = "passed", **measurements) -> LawResult:
    return LawResult("RMSNorm.rmsnorm_matches_golden", "RMSNorm", dtype, "cpu", status, measurements=measurements)


def test_needed_means_exceeded_without_it_failed_or_excused_and_the_suggestion_keeps_those_dtypes():
    c = parse("RMSNorm", {"eps_dtype": "bf16", "weight_offset": 1.0})
    results = [
        _result("fp64", **{"headroom without": {"eps_dtype": 0.5, "weight_offset": 0.2}}),
        _result("fp32", **{"headroom without": {"eps_dtype": 3.0, "weight_offset": 0.4}}),
        _result("fp16", "failed"),
        _result("bf16", "xfailed", declared="declared compute bf16→…"),
    ]
    eps, offset = findings.declarations(results, {"RMSNorm": c})
    assert (eps.needed, eps.unneeded, eps.headroom) == (("fp32", "fp16", "bf16"), ("fp64",), 0.5)
    assert offset.needed == ("fp16", "bf16") and not offset.warning
    lonely = findings.declarations([_result("fp32", **{"headroom without": {"eps_dtype": 0.3}})], {"RMSNorm": c})[0]
    assert (
        lonely.warning
        and lonely.suggestion() == 'declare `eps_dtype: {"fp64": "bf16", "fp16": "bf16", "bf16": "bf16"}`'
    )
    assert findings.declarations([_result("fp32")], {"RMSNorm": c}) == []  # nothing measured it: nothing said


def test_bounds_without_a_declaration_are_exactly_the_undeclared_ones_and_absent_when_nothing_departs():
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(3, 16, generator=g, dtype=torch.float64), torch.randn(16, generator=g, dtype=torch.float64)
    c = parse("RMSNorm", {"compute_dtype": {"fp64": "fp32"}})
    plain = bounds.rmsnorm(x, w, 1e-6, torch.float64)
    with (
        bounds.declared(c.arithmetic()),
        bounds.shadowed({"compute_dtype": c.without("compute_dtype", "fp64").arithmetic()}),
    ):
        shadowed = bounds.between(bounds.rmsnorm(x, w, 1e-6, torch.float64))
    assert (shadowed.alternatives["compute_dtype"] == 2 * plain.abs).all()
    assert (shadowed.abs > 2 * plain.abs).all()  # the declared bound is the looser one
    assert plain.alternatives is None


def test_check_reports_the_diagnosis_in_the_footer_and_the_json(capsys, tmp_path):
    module = tmp_path / "fp32_eps.py"
    module.write_text("from tests.correct_impls.unconventional import Fp32EpsRMSNorm as RMSNorm\n")
    report = tmp_path / "r.json"
    args = [
        "check",
        str(module),
        "--profile",
        "ci",
        "--only",
        "RMSNorm.rmsnorm_matches_stored_golden",
        "--dtype",
        "fp64",
    ]
    assert main([*args, "--workers", "1", "-q", "--json", str(report)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "diagnosis: 1 failure (fp64; rmsnorm_matches_stored_golden) — RMSNorm: consistent with eps stored in fp32"
        in out
    )
    [record] = json.loads(report.read_text())["results"]
    assert (
        record["diagnosis"].startswith("consistent with eps stored in fp32")
        and '`eps_dtype: "fp32"`' in record["diagnosis"]
    )


def test_a_batch_variant_implementation_declaring_it_exits_0_with_the_measurement_reported(capsys):
    args = ["check", "tests/correct_impls/batch_variant_declared.py", "--profile", "ci", "--workers", "1", "-q"]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "measured: RMSNorm is not batch-invariant (reported, not required): fp64" in out
    assert " 0 failed," in out


@pytest.mark.parametrize(
    ("component", "law"), [("SwiGLU", "swiglu_is_batch_invariant"), ("Block", "block_is_batch_invariant")]
)
def test_batch_invariance_is_measured_undeclared_and_required_declared(component, law):
    reference = run_law(LAWS[f"{component}.{law}"], subject(component, getattr(nanolm_core, component)), dtype="fp32")
    assert reference.status == "passed" and isinstance(reference.measurements["batch_invariant"], bool)
    required = subject(component, getattr(nanolm_core, component), {"batch_invariant": True})
    assert parse(component, {"batch_invariant": True}).batch_invariance("fp32", "cpu")
    if reference.measurements["batch_invariant"] is False:  # nn.Linear on this CPU: declared invariant, it fails
        assert run_law(LAWS[f"{component}.{law}"], required, dtype="fp32").status == "failed"


def test_rmsnorm_batch_invariance_is_required_on_the_cpu_only_unless_declared():
    assert parse("RMSNorm", {}).batch_invariance("fp32", "cpu")
    assert not parse("RMSNorm", {}).batch_invariance("fp32", "cuda:0")
    assert not parse("SwiGLU", {}).batch_invariance("fp32", "cpu")
    declared = parse("RMSNorm", {"batch_invariant": {"bf16": False}})
    assert not declared.batch_invariance("bf16", "cpu") and declared.batch_invariance("fp32", "cpu")


def test_batch_lines_report_only_variance_that_was_not_required():
    varied = LawResult("SwiGLU.swiglu_is_batch_invariant", "SwiGLU", "fp32", "cpu", "passed")
    varied.measurements = {"batch_invariant": False, "batch variance": {"examples": 8, "differing": 3, "max_ulp": 2.0}}
    same = LawResult("Block.block_is_batch_invariant", "Block", "fp32", "cpu", "passed")
    same.measurements = {"batch_invariant": True, "batch variance": {"examples": 8, "differing": 0, "max_ulp": 0.0}}
    assert findings.batch_lines([varied, same]) == [
        "SwiGLU is not batch-invariant (reported, not required): fp32 3 of 8 examples differ, up to 2 ULP"
    ]


# ------------------------------------------------------------------------ messages


class FirstSightWrong(nanolm_core.RMSNorm):
    """Not deterministic: 1.5·y the first time it sees an input, y ever after (so a replay of a failure passes)."""

    seen: ClassVar[set[bytes]] = set()

    def forward(self, x):
        key = x.detach().cpu().numpy().tobytes()
        first = key not in self.seen
        self.seen.add(key)
        y = F.rms_norm(x, (self.dim,), self.weight, self.eps)
        return y * 1.5 if first else y


def test_a_verdict_that_flips_is_explained_by_the_suite_not_by_hypothesis():
    FirstSightWrong.seen.clear()
    law = LAWS["RMSNorm.rmsnorm_is_scale_invariant"]
    result = run_law(law, subject("RMSNorm", FirstSightWrong), dtype="fp32", profile="ci")
    assert result.status == "failed" and result.cause == "law"
    lines = result.message.splitlines()
    assert lines[0] == "one example, run twice by Hypothesis, gave two verdicts"
    assert lines[1].startswith("  first run: failed: f(α·x) vs f(x): ULP error") and lines[2] == "  second run: passed"
    assert "the implementation is not deterministic: call 1 got the same input twice" in lines[3]
    assert lines[4].startswith("  draws: case={'shape'")
    assert "Inconsistent" not in result.message and "external state" not in result.message


def test_a_bitwise_failure_gives_its_distance_in_ulps():
    p = run_law(LAWS["RMSNorm.rmsnorm_is_batch_invariant"], subject("RMSNorm", BatchVariantRMSNorm), dtype="fp32")
    assert p.status == "failed"
    detail = next(line for line in p.message.splitlines() if "first at" in line)
    assert "ULP of fp32 apart); largest distance" in detail
    expected, actual = (float(v) for v in detail.split("expected ")[1].split(" (")[0].split(", actual "))
    assert expected != actual  # printed with every digit: two different values never read the same
