"""The README's examples of checking your own code run as written: the functional adapter, the ONNX Runtime bridge
and the drop-in assertions (a stand-in ``mykernels`` supplies the kernels the examples import)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from properties.entry.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

MYKERNELS = """
import torch
import torch.nn.functional as F


def rms_norm(x, weight, eps, casting_mode="gemma"):  # Liger's three casting modes
    c = torch.float64 if x.dtype == torch.float64 else torch.float32
    if casting_mode == "gemma":  # all in c, one rounding
        return F.rms_norm(x.to(c), x.shape[-1:], weight.to(c), eps).to(x.dtype)
    if casting_mode == "llama":  # x·r in c rounded to the input dtype, then ·w
        return (x.to(c) * torch.rsqrt(x.to(c).pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight
    ms = x.to(c).pow(2).mean(-1, keepdim=True).to(x.dtype)  # "none": the sum of squares in c, the rest in x.dtype
    return x * torch.rsqrt(ms + eps) * weight


def swiglu(x, w_gate, w_up, w_down):
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)
"""
WRONG = "\n\ndef rms_norm(x, weight, eps, casting_mode=None):  # eps outside the square root\n" + (
    "    return x / (x.float().pow(2).mean(-1, keepdim=True).sqrt() + eps).to(x.dtype) * weight\n"
)


def example(name: str) -> str:
    m = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", README, re.S)
    assert m, f"README has no example {name!r}"
    return m.group(1)


@pytest.fixture
def kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "mykernels.py").write_text(MYKERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return tmp_path


def test_the_functional_adapter_example_is_at_most_five_lines_and_passes(kernels):
    code = example("functional-adapter")
    assert len([line for line in code.splitlines() if line.strip()]) <= 5
    (kernels / "my_adapter.py").write_text(code)
    args = ["check", str(kernels / "my_adapter.py"), "--profile", "ci", "--dtype", "fp32,bf16", "-q", "--workers", "1"]
    assert main([*args, "--only", "rmsnorm_matches_golden,swiglu_matches_golden"]) == 0


def test_the_onnxruntime_example_passes_and_skips_bf16(kernels, capsys):
    pytest.importorskip("onnxruntime")
    (kernels / "ort_adapter.py").write_text(example("onnxruntime"))
    args = ["check", str(kernels / "ort_adapter.py"), "--profile", "ci", "--only", "rmsnorm_matches_golden", "-q"]
    assert main([*args, "--dtype", "fp32,bf16", "--workers", "1"]) == 0
    assert "dtype not supported" in capsys.readouterr().out


def _pytest(directory: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rf"],
        cwd=directory, env={**env, "COLUMNS": "80"}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_the_drop_in_example_with_declared_conventions_and_gradients_passes_and_fails_like_a_law(kernels):
    """One pytest run of three copies: the example as written (passes), without the "none" mode's declaration
    (bf16 arithmetic judged as the contract's fp32: fails), and against a wrong kernel (fails like a law)."""
    code = example("assertions")
    assert "conventions=" in code and "assert_rmsnorm_grads_close(" in code  # what the example is there to show
    undeclared = code.replace('"none": {"compute_dtype": "input", "accumulation_dtype": "fp32"}', '"none": {}')
    assert undeclared != code
    (kernels / "test_mine.py").write_text(code)
    (kernels / "test_undeclared.py").write_text(undeclared)
    (kernels / "wrongkernels.py").write_text(MYKERNELS + WRONG)
    (kernels / "test_wrong.py").write_text(code.replace("from mykernels import", "from wrongkernels import"))
    run = _pytest(kernels)
    failed = sorted(re.findall(r"^FAILED (\S+) - ", run.stdout, re.M))
    assert failed == [
        "test_undeclared.py::test_rms_norm[none]",
        "test_wrong.py::test_rms_norm[gemma]",  # (unit-scale rows: in bf16 arithmetic, "none", the misplaced eps
        "test_wrong.py::test_rms_norm[llama]",  # stays within the bound)
    ], run.stdout + run.stderr
    assert "3 failed, 9 passed" in run.stdout, run.stdout  # test_mine.py: all 4 pass
    for mode in ("llama", "gemma"):
        assert f"FAILED test_wrong.py::test_rms_norm[{mode}] - VerificationError: casting_mode=" in run.stdout
        assert f"reproduce: pytest 'test_wrong.py::test_rms_norm[{mode}]'" in run.stdout
    text = " ".join(word for word in run.stdout.split() if word != "E")  # (pytest's "E" before each line)
    assert "casting_mode=llama assert_rmsnorm_close [bf16, cpu]: y: ULP error" in text, run.stdout
    assert re.search(r"> bound \S+ ULP \(headroom \S+\) out of bound: \d+ of 8192 elements", text), run.stdout
    assert "input: RMSNorm, bf16, shape=[2, 8, 512], D=512, cpu, eps: 1e-06 declared: roundings 2" in text
    failures = run.stdout.split(" FAILURES ")[1].split(" short test summary info ")[0].splitlines()
    assert [line for line in failures if len(line) > 80 and not line.startswith("reproduce: ")] == []
