"""The stable public surface (README, "Stable public surface"): every module the table names imports, without a
deprecation warning, and has every name the table lists — so the documentation stays true."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

import properties

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


# ---------------------------------------------------------------------------- names that moved since 0.1 (issue 37)
# Every module path of 0.1 that moved (``properties.MOVED``) and every public name that moved out of a module that
# stays (``properties.MOVED_NAMES``) keeps working for one minor version, warning where it is used.
MOVED_PATHS = sorted(properties.MOVED)
MOVED_NAMES = sorted((m, n) for m, names in properties.MOVED_NAMES.items() for n in names)


def test_the_moved_names_are_the_ones_0_1_users_import():
    assert {"properties.assertions", "properties.strategies", "properties.plugin", "properties.bounds"} <= set(
        MOVED_PATHS
    )
    assert ("properties.adapters.hf_llama", "causal_mask") in MOVED_NAMES


@pytest.mark.parametrize("old", MOVED_PATHS)
def test_a_moved_module_path_gives_the_module_with_a_deprecation_warning(old, monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: import {properties.MOVED[old]}"):
        assert importlib.import_module(old) is importlib.import_module(properties.MOVED[old])


@pytest.mark.parametrize(("module", "name"), MOVED_NAMES, ids=lambda v: str(v))
def test_a_moved_name_gives_the_object_with_a_deprecation_warning(module, name):
    if module.startswith("properties.adapters.hf"):
        pytest.importorskip("transformers", reason="needs the hf extra: pip install -e '.[hf]'")
    where, _, new = properties.MOVED_NAMES[module][name].partition(":")
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{name} is deprecated: use {where}.{new}"):
        assert getattr(mod, name) is getattr(importlib.import_module(where), new)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        mod.not_a_name  # noqa: B018
