"""Graded exercises: the stubs in ``exercises_en/`` are reported "not implemented" (a skip with the student-facing
message, never a crash), and the filled-in copy in ``tests/exercise_solutions/`` passes the laws.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import exercises_en
import nanolm_core
from properties.running.loading import Implementation, load
from properties.running.runner import LAWS, run_law

ROOT = Path(__file__).resolve().parents[2]

# One representative dtype per law: the law's fp32 run where it applies, else its first dtype (bf16-only laws).
LAW_DTYPES = {law_id: (torch.float32 if torch.float32 in law.dtypes else law.dtypes[0]) for law_id, law in LAWS.items()}
ON_CPU = [law_id for law_id, law in LAWS.items() if "accelerator" not in law.tags]  # the CPU's laws
COURSE_LAWS = sorted(law_id for law_id in ON_CPU if law_id.startswith(("RMSNorm.", "SwiGLU.")))
BLOCK_LAWS = sorted(law_id for law_id in ON_CPU if law_id.startswith("Block."))


def solutions() -> Implementation:
    """The filled-in exercises, loaded as a package (they use relative imports, like the exercises)."""
    return Implementation("tests.exercise_solutions", importlib.import_module("tests.exercise_solutions"))


@pytest.mark.parametrize(
    "law_id",
    [
        "RMSNorm.rmsnorm_matches_golden",
        "RMSNorm.rmsnorm_does_not_center",
        "SwiGLU.swiglu_matches_golden",
        "SwiGLU.swiglu_is_elementwise_silu_gate",
        "Block.block_matches_golden",
        "Block.block_is_causal",
    ],
)
def test_stub_is_reported_not_implemented(law_id):
    law = LAWS[law_id]
    result = run_law(law, load("exercises_en"), dtype=LAW_DTYPES[law_id], profile="ci")
    assert result.status == "skipped", f"{law_id} on the stubs: {result.status}: {result.message}"
    assert result.message.startswith("not implemented"), result.message
    assert "is your exercise" in result.message and "exercises_en/" in result.message, result.message


@pytest.mark.parametrize(
    ("build", "where"),
    [
        (lambda: exercises_en.RMSNorm(4)(torch.ones(2, 4)), "modules.py"),
        (lambda: exercises_en.SwiGLU(4, 8)(torch.ones(2, 4)), "modules.py"),
        (lambda: exercises_en.Block(nanolm_core.ModelConfig(dim=8, n_heads=2, n_kv_heads=1)), "model.py"),
    ],
)
def test_stub_message_gives_the_formula_and_the_file(build, where):
    with pytest.raises(NotImplementedError, match=rf"is your exercise: implement .*=.* in exercises_en/{where}"):
        build()


def test_stubs_keep_the_contract_names():
    """What the stubs give the student already matches the contract (load_state_dict(strict=True) works)."""
    ref_norm, ref_ffn = nanolm_core.RMSNorm(8), nanolm_core.SwiGLU(8, 16)
    exercises_en.RMSNorm(8).load_state_dict(ref_norm.state_dict(), strict=True)
    exercises_en.SwiGLU(8, 16).load_state_dict(ref_ffn.state_dict(), strict=True)


def test_every_stub_docstring_states_its_formula():
    for cls, formula in (
        (exercises_en.RMSNorm, "sqrt(mean(x²"),
        (exercises_en.SwiGLU, "silu(w_gate(x))"),
        (exercises_en.Block, "x + attn(attn_norm(x))"),
    ):
        assert formula in (cls.__doc__ or ""), cls.__name__


@pytest.mark.parametrize("law_id", COURSE_LAWS + BLOCK_LAWS)
def test_filled_in_solutions_pass(law_id):
    result = run_law(LAWS[law_id], solutions(), dtype=LAW_DTYPES[law_id], profile="ci")
    assert result.status == "passed", f"the exercise solution fails {law_id}: {result.message}"


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
@pytest.mark.parametrize("law_id", ["RMSNorm.rmsnorm_matches_golden", "SwiGLU.swiglu_matches_golden"])
def test_filled_in_solutions_match_golden_in_every_dtype(law_id, dtype):
    result = run_law(LAWS[law_id], solutions(), dtype=dtype, profile="ci")
    assert result.status == "passed", f"the exercise solution fails {law_id} in {dtype}: {result.message}"


# The course's command, verbatim (week 6: "Exercise exercises_en/modules.py, check: NANOLM_IMPL=exercises_en pytest
# tests/test_modules.py -k "rmsnorm or swiglu" -v"), and the tests it names in test_modules.py.
COURSE_COMMAND = ["pytest", "tests/test_modules.py", "-k", "rmsnorm or swiglu", "-v"]
NAMED = ("test_rmsnorm_does_not_center", "test_rmsnorm_produces_unit_rms", "test_rmsnorm_scales_with_gamma")
CENTRING = "        xc = xc - xc.mean(dim=-1, keepdim=True)  # the course mistake: the mean subtracted out of habit\n"


def student_clone(tmp_path: Path, mistake: str = "") -> Path:
    """What the course's command reads of a student's clone — pyproject.toml, tests/{__init__, conftest,
    test_modules}.py — with exercises_en/ solved (the files of tests/exercise_solutions/), plus ``mistake``: a line
    inserted into RMSNorm.forward after its input is upcast."""
    clone = tmp_path / "clone"
    for name in ("pyproject.toml", "tests/__init__.py", "tests/conftest.py", "tests/test_modules.py"):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, clone / name)
    (clone / "exercises_en").mkdir()
    for source in (ROOT / "tests" / "exercise_solutions").glob("*.py"):
        text = source.read_text()
        if source.name == "modules.py" and mistake:
            anchor = "        xc = x.to(c)\n"
            assert anchor in text, "the solution's RMSNorm.forward changed: update student_clone"
            text = text.replace(anchor, anchor + mistake)
        (clone / "exercises_en" / source.name).write_text(text)
    return clone


def course_command(cwd: Path) -> str:
    """``NANOLM_IMPL=exercises_en pytest tests/test_modules.py -k "rmsnorm or swiglu" -v`` run in ``cwd`` (laws in
    the ci profile, ``$HYPOTHESIS_PROFILE``: the same verdict on every run) → its output; the exit status is checked
    by the caller through the summary line."""
    pytest_script = shutil.which("pytest", path=str(Path(sys.executable).parent))
    command = [pytest_script] if pytest_script else [sys.executable, "-m", "pytest"]
    env = {**os.environ, "NANOLM_IMPL": "exercises_en", "HYPOTHESIS_PROFILE": "ci"}
    proc = subprocess.run(
        [*command, *COURSE_COMMAND[1:], "-p", "no:cacheprovider"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,  # a safety net: the run takes seconds
    )  # fmt: skip
    return f"exit status {proc.returncode}\n{proc.stdout}{proc.stderr}"


def outcomes(out: str, name: str) -> set[str]:
    """The outcomes (PASSED, FAILED, SKIPPED …) of every CPU parametrization of the course test ``name``."""
    found = re.findall(rf"^tests/test_modules\.py::Test\w+::{name}\[\w+-cpu\] (\w+)", out, flags=re.M)
    assert found, f"{name} was not collected on the CPU:\n{out[-3000:]}"
    return set(found)


def test_the_course_command_reports_the_stubs_as_not_implemented():
    """From the repository root, on the stubs: exit 0, every course test of a stub skipped with what to write and
    where."""
    out = course_command(ROOT)
    assert out.startswith("exit status 0\n"), out[-3000:]
    for name in NAMED:
        assert outcomes(out, name) == {"SKIPPED"}, out[-3000:]
    assert "not implemented: RMSNorm.forward" in out and "in exercises_en/modules.py" in out, out[-3000:]
    assert "not implemented: SwiGLU.forward" in out, out[-3000:]


def test_the_course_command_passes_a_solved_exercise(tmp_path):
    out = course_command(student_clone(tmp_path))
    assert out.startswith("exit status 0\n"), out[-3000:]
    for name in NAMED:
        assert outcomes(out, name) == {"PASSED"}, out[-3000:]
    assert " FAILED" not in out and "not implemented" not in out, out[-3000:]


def test_the_course_command_fails_a_wrong_exercise_with_the_laws_message(tmp_path):
    """The mean subtracted out of habit: test_rmsnorm_does_not_center fails with its law's statement, measured
    failure and reproduction line (the law's assertion, not a crash of the exercise)."""
    out = course_command(student_clone(tmp_path, mistake=CENTRING))
    assert out.startswith("exit status 1\n"), out[-3000:]
    assert outcomes(out, "test_rmsnorm_does_not_center") == {"FAILED"}, out[-3000:]
    law = LAWS["RMSNorm.rmsnorm_does_not_center"]
    flat = " ".join(out.split())  # (the message is wrapped at 80 columns)
    assert f"{law.id} [" in out and "cause: law, found after" in flat, out[-3000:]
    assert " ".join(law.summary.split()) in flat, out[-3000:]
    assert "reproduce: pytest 'tests/test_modules.py::TestRMSNorm::test_rmsnorm_does_not_center[" in out
    assert "RMSNorm raised" not in out, out[-3000:]  # the message of a crash


def test_the_readme_and_the_exercises_quote_the_course_command():
    command = 'NANOLM_IMPL=exercises_en pytest tests/test_modules.py -k "rmsnorm or swiglu" -v'
    assert command == f'NANOLM_IMPL=exercises_en {" ".join(COURSE_COMMAND[:3])} "{COURSE_COMMAND[3]}" -v'
    assert command in (ROOT / "README.md").read_text(encoding="utf-8")
    assert command in (exercises_en.__doc__ or "")
