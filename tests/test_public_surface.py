"""The stable public surface (README, "Stable public surface"): every module the table names imports, without a
deprecation warning, and has every name the table lists — so the documentation stays true."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _surface() -> dict[str, list[str]]:
    section = README.read_text(encoding="utf-8").split("## Stable public surface", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        module, _, names = (cell.strip() for cell in row.strip("|").split("|"))
        table[module.strip("`")] = re.findall(r"`([^`]+)`", names)
    return table


def test_the_table_names_the_helper_modules_users_import():
    assert {"properties.testing", "properties.adapters.kit", "properties.adapters.hf"} <= set(_surface())


@pytest.mark.parametrize(("module", "names"), list(_surface().items()))
def test_every_public_name_imports_without_a_warning(module, names):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        mod = importlib.import_module(module)
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{module} lacks {missing} (README, 'Stable public surface')"
