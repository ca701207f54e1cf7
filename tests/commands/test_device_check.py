"""bench/device_check.sh, the script prepared for a lent GPU, runs end to end on the CPU (DEVICE=cpu)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_device_script_runs_end_to_end_on_the_cpu(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "DEVICE": "cpu", "IMPLS": "reference torch", "PYTHON": sys.executable}
    env["ONLY"] = "rmsnorm_matches_golden,swiglu_maps_zero_to_zero"
    proc = subprocess.run(["bash", str(ROOT / "bench" / "device_check.sh")], env=env, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) == {"reference", "torch"}
    for impl, entry in summary.items():
        assert entry["summary"]["failed"] == 0 and entry["summary"]["passed"] > 0, impl
        assert json.loads((tmp_path / f"{impl}.json").read_text())["schema"]
    assert "| reference |" in (tmp_path / "summary.md").read_text()
