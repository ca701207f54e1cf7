"""bench/device_check.sh's Triton half without a GPU: the interpreted-vs-compiled comparison (bench/triton_verdicts.py)
on two reports made up here, and the script stopping cleanly, status 0, where no CUDA device is lent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

from tests.common.bench import script

ROOT = Path(__file__).resolve().parents[2]
verdicts = script("triton_verdicts")


def _report(kernels: str, rows: list[tuple[str, str, str, str, str | None]], left: tuple = ()) -> dict:
    results = [
        {"law_id": law, "dtype": dt, "device": dev, "status": st, "cause": cause, "measurements": {}}
        for law, dt, dev, st, cause in rows
    ]
    for r in results:
        if (r["law_id"], r["dtype"]) in left:
            r["measurements"]["sizes left"] = [{"case": "2^16 + 1 rows", "estimated s": 700.0, "budget s": 90.0}]
    return {"implementation": {"spec": "liger", "kernels": kernels}, "results": results}


def test_verdicts_are_compared_law_by_law_and_dtype_by_dtype():
    interpreted = _report("Triton kernels interpreted (…)", [
        ("RMSNorm.rmsnorm_matches_golden", "fp32", "cpu", "passed", None),
        ("RMSNorm.rmsnorm_matches_golden", "bf16", "cpu", "failed", "law"),
        ("RMSNorm.rmsnorm_gradients_match_golden", "fp64", "cpu", "failed", "crash"),
        ("RMSNorm.rmsnorm_matches_stored_golden", "fp32", "cpu", "passed", None),
    ], left={("RMSNorm.rmsnorm_matches_golden", "fp32")})  # fmt: skip
    compiled = _report("Triton kernels compiled", [
        ("RMSNorm.rmsnorm_matches_golden", "fp32", "cpu", "failed", "crash"),  # CPU results of the compiled run: unused
        ("RMSNorm.rmsnorm_matches_golden", "fp32", "cuda", "passed", None),
        ("RMSNorm.rmsnorm_matches_golden", "bf16", "cuda", "passed", None),
        ("RMSNorm.rmsnorm_gradients_match_golden", "fp64", "cuda", "failed", "crash"),
        ("RMSNorm.rmsnorm_agrees_with_the_cpu", "fp32", "cuda", "passed", None),
    ])  # fmt: skip
    c = verdicts.compare(interpreted, compiled)
    assert c["agree"] == 2
    assert c["differ"] == [("RMSNorm.rmsnorm_matches_golden", "bf16", "failed (law)", "passed")]
    assert c["only_interpreted"] == [("RMSNorm.rmsnorm_matches_stored_golden", "fp32")]
    assert c["only_compiled"] == [("RMSNorm.rmsnorm_agrees_with_the_cpu", "fp32")]
    text = verdicts.markdown("liger", c)
    assert "2 law runs agree, 1 differ" in text
    assert "| RMSNorm.rmsnorm_matches_golden | bf16 | failed (law) | passed |" in text
    assert c["sizes_left"] == [("RMSNorm.rmsnorm_matches_golden", "fp32", ["2^16 + 1 rows"])]  # agrees, on fewer sizes
    assert "1 law runs judged fewer sizes interpreted" in text and "| fp32 | 2^16 + 1 rows |" in text


def test_without_a_cuda_device_the_script_stops_cleanly(tmp_path):
    if torch.cuda.is_available():
        import pytest

        pytest.skip("a CUDA device is present: the script would run compiled")
    env = {**os.environ, "OUT": str(tmp_path), "DEVICE": "cuda", "IMPLS": "liger", "PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(ROOT / "bench" / "device_check.sh")], env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no CUDA device here" in proc.stdout
    assert "not run: no CUDA device" in (tmp_path / "summary.md").read_text()
    assert not (tmp_path / "liger.json").exists()
