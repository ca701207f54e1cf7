"""Graded exercises: the stubs in ``exercises/`` are reported "not implemented" (a skip with the student-facing
message, never a crash), and the filled-in copy in ``tests/exercise_solutions/`` passes the laws.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import exercises
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
    result = run_law(law, load("exercises"), dtype=LAW_DTYPES[law_id], profile="ci")
    assert result.status == "skipped", f"{law_id} on the stubs: {result.status}: {result.message}"
    assert result.message.startswith("not implemented"), result.message
    assert "is your exercise" in result.message and "exercises/" in result.message, result.message


@pytest.mark.parametrize(
    ("build", "where"),
    [
        (lambda: exercises.RMSNorm(4)(torch.ones(2, 4)), "modules.py"),
        (lambda: exercises.SwiGLU(4, 8)(torch.ones(2, 4)), "modules.py"),
        (lambda: exercises.Block(nanolm_core.ModelConfig(dim=8, n_heads=2, n_kv_heads=1)), "model.py"),
    ],
)
def test_stub_message_gives_the_formula_and_the_file(build, where):
    with pytest.raises(NotImplementedError, match=rf"is your exercise: implement .*=.* in exercises/{where}"):
        build()


def test_stubs_keep_the_contract_names():
    """What the stubs give the student already matches the contract (load_state_dict(strict=True) works)."""
    ref_norm, ref_ffn = nanolm_core.RMSNorm(8), nanolm_core.SwiGLU(8, 16)
    exercises.RMSNorm(8).load_state_dict(ref_norm.state_dict(), strict=True)
    exercises.SwiGLU(8, 16).load_state_dict(ref_ffn.state_dict(), strict=True)


def test_every_stub_docstring_states_its_formula():
    for cls, formula in (
        (exercises.RMSNorm, "sqrt(mean(x²"),
        (exercises.SwiGLU, "silu(w_gate(x))"),
        (exercises.Block, "x + attn(attn_norm(x))"),
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


def test_course_command_reports_stubs_as_not_implemented():
    """The course's command: NANOLM_IMPL=exercises pytest tests/conformance/test_modules.py -k "rmsnorm or swiglu"."""
    env = {**os.environ, "NANOLM_IMPL": "exercises", "HYPOTHESIS_PROFILE": "ci"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/conformance/test_modules.py",
            "-k",
            "rmsnorm or swiglu",
            "-v",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]  # skips only: no failure, no error
    assert " SKIPPED" in out and "not implemented" in out, out[-3000:]
    assert " FAILED" not in out and " ERROR" not in out, out[-3000:]
