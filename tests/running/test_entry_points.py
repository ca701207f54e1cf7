"""Adapter ids are entry points (group ``nanolm_verify.adapters``): the shipped ones from the suite's pyproject.toml,
and any installed distribution's own — a library registers ``mylib`` and ``nanolm-verify check mylib`` runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from properties.running import loading

ROOT = Path(__file__).resolve().parents[2]
CLI = "from properties.entry.cli import run; run()"  # what the console script runs


def _shipped() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["entry-points"][loading.ENTRY_POINT_GROUP]


def test_the_shipped_ids_are_the_pyproject_entry_points_and_name_existing_modules():
    import importlib.util

    shipped = _shipped()
    assert {"reference", "torch", "hf-llama", "liger"} <= set(shipped)
    assert {k: loading.adapters()[k] for k in shipped} == shipped
    assert all(importlib.util.find_spec(module) for module in shipped.values())


def _library(root: Path, *, registered: bool = True) -> Path:
    """An installed kernel library, as pip would leave it: its module and (``registered``) its dist-info with an
    entry point ``mylib`` → ``mylib_nanolm`` (an id that is no importable module name)."""
    (root / "mylib_nanolm.py").write_text(
        "import nanolm_core\n\n\nclass RMSNorm(nanolm_core.RMSNorm):\n    pass\n", encoding="utf-8"
    )
    if registered:
        info = root / "mylib_kernels-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mylib-kernels\nVersion: 1.0\n", encoding="utf-8")
        (info / "entry_points.txt").write_text(
            f"[{loading.ENTRY_POINT_GROUP}]\nmylib = mylib_nanolm\n", encoding="utf-8"
        )
    return root


def _cli(site: Path, cwd: Path, *words: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NANOLM_", "HYPOTHESIS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return subprocess.run(
        [sys.executable, "-c", CLI, *words], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    (tmp_path / "cwd").mkdir()
    return tmp_path / "cwd"


def test_a_library_registers_its_own_id_and_check_runs_it(tmp_path, empty):
    site = _library(tmp_path)
    listed = _cli(site, empty, "check", "--list", "--json", "-", "--only", "RMSNorm")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["adapters"]["mylib"] == "mylib_nanolm"
    report = tmp_path / "out" / "r.json"
    words = ("check", "mylib", "--profile", "ci", "--only", "RMSNorm", "--workers", "1", "-q", "--json", str(report))
    run = _cli(site, empty, *words)
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert doc["implementation"]["spec"] == "mylib" and doc["implementation"]["module"] == "mylib_nanolm"
    assert doc["summary"]["passed"] > 0 and doc["summary"]["failed"] == 0
    assert not list(empty.iterdir())  # nothing left in the user's working directory


def test_without_the_entry_point_the_id_is_unknown(tmp_path, empty):
    site = _library(tmp_path, registered=False)
    run = _cli(site, empty, "check", "mylib", "--profile", "ci", "--only", "RMSNorm", "--workers", "1", "-q")
    assert run.returncode == 2 and "cannot import implementation 'mylib'" in run.stderr


def test_an_id_two_distributions_register_differently_is_refused_naming_both(monkeypatch):
    monkeypatch.setattr(loading, "_registered", lambda: {"twice": ("a_mod", "b_mod")})
    with pytest.raises(loading.ImplementationError, match="'twice' is registered for a_mod and b_mod"):
        loading.load("twice")
