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


def rms_norm(x, weight, eps):
    return F.rms_norm(x, x.shape[-1:], weight, eps)


def swiglu(x, w_gate, w_up, w_down):
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)
"""
WRONG = "\n\ndef rms_norm(x, weight, eps):  # eps outside the square root\n" + (
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
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "test_mine.py"],
        cwd=directory, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_the_drop_in_assertions_example_passes_on_a_correct_kernel_and_fails_like_a_law(kernels):
    (kernels / "test_mine.py").write_text(example("assertions"))
    run = _pytest(kernels)
    assert run.returncode == 0, run.stdout + run.stderr
    (kernels / "mykernels.py").write_text(MYKERNELS + WRONG)
    run = _pytest(kernels)
    assert run.returncode == 1, run.stdout
    assert re.search(r"y: ULP error \S+ > bound \S+ ULP \(= 0\.5 \+ ", run.stdout), run.stdout
    assert "[RMSNorm, bf16, shape=[16, 512], D=512, cpu, eps: 1e-06]" in run.stdout
    assert "reproduce: pytest test_mine.py::test_my_kernels_in_bf16" in run.stdout
