"""The bench scripts (``bench/*.py``: measurements, not a package) loaded as modules, for the tests of their
selection and summary logic."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

__all__ = ["script"]

BENCH = Path(__file__).resolve().parents[2] / "bench"


def script(name: str) -> ModuleType:
    """``bench/<name>.py`` as a module (its ``main`` not run)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
