"""The component × axis matrix (``properties.library.matrix``): generated, up to date in docs/matrix.md, no empty
cell without a written reason — and a component added by one record gets every generic law family and its drop-ins,
while each axis it is not covered on shows up as a hole until its record gives the reason."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path

import pytest
import torch

import nanolm_core
from properties.gallery import rmsnorm_cached_weight_cast, rmsnorm_dropped_column_stride
from properties.library import components, families, matrix
from properties.library.subject import Implementation
from properties.running.runner import LAWS, run_law

ROOT = Path(__file__).resolve().parents[2]


def test_docs_matrix_is_generated_and_up_to_date():
    page = (ROOT / "docs" / "matrix.md").read_text(encoding="utf-8")
    assert page == matrix.markdown(), (
        "docs/matrix.md is stale: nanolm-verify check --list --matrix --markdown docs/matrix.md"
    )


def test_no_empty_cell_is_left_without_a_reason():
    assert matrix.unexplained() == []
    grid = matrix.cells()
    assert set(grid) == set(components.names())
    for name, family in families.FAMILIES.items():  # the contract's four: every family applies, or it says why
        for c in grid:
            assert grid[c][name].laws or grid[c][name].reason == family.not_applicable(components.record(c)), name
    assert all(grid[c]["layout"].laws for c in grid)


def test_the_cli_prints_the_matrix_and_writes_the_page(tmp_path, capsys):
    from properties.entry.cli import main

    assert main(["check", "--list", "--matrix"]) == 0
    out = capsys.readouterr().out
    assert "layout: memory layout of every input and parameter" in out and "add_rmsnorm_ignores_memory_layout" in out
    assert out.rstrip().endswith("0 empty cells without a reason")
    page = tmp_path / "matrix.md"
    assert main(["check", "--list", "--matrix", "--markdown", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == matrix.markdown()
    assert main(["check", "--matrix"]) == 2  # --matrix goes with --list
    assert "--matrix goes with --list" in capsys.readouterr().err


@pytest.fixture
def scaled():
    """A throwaway component added by one record: "ScaledRMSNorm", RMSNorm's function under another name, with no
    written reason for anything."""
    rec = dataclasses.replace(components.record("RMSNorm"), name="ScaledRMSNorm", slug="", not_applicable={})
    components.register(rec)
    try:
        yield rec
    finally:
        components.unregister(rec.name)
        families.forget(rec.name)


def test_a_throwaway_component_gets_every_generic_family_and_its_holes_need_reasons(scaled):
    ids = families.apply(scaled)
    assert set(ids) == set(families.FAMILIES)  # a law of every family, or the reason the family derives from the record
    assert all(ids[name] or f.not_applicable(scaled) for name, f in families.FAMILIES.items())
    assert ids["layout"] == ("ScaledRMSNorm.scaled_rmsnorm_ignores_memory_layout",)
    impl = Implementation("scaled", types.SimpleNamespace(ScaledRMSNorm=nanolm_core.RMSNorm))
    wrong = Implementation("scaled-wrong", types.SimpleNamespace(ScaledRMSNorm=rmsnorm_dropped_column_stride.RMSNorm))
    law = LAWS["ScaledRMSNorm.scaled_rmsnorm_ignores_memory_layout"]
    assert run_law(law, impl, dtype=torch.float32, profile="ci").status == "passed"
    caught = run_law(law, wrong, dtype=torch.float32, profile="ci")
    assert caught.status == "failed" and caught.cause == "law", caught.message
    holes = {axis for c, axis in matrix.unexplained() if c == "ScaledRMSNorm"}
    generic = {*families.FAMILIES, "drop-in", "diagnosis"}
    assert holes and not holes & generic  # every generic axis covered; the rest asks for a written reason
    assert "own" in holes  # (its record's copies of RMSNorm's sizes and stored cases give it those families)
    assert ids["paths"] == ("ScaledRMSNorm.scaled_rmsnorm_matches_golden_at_code_path_sizes",)
    assert ids["stored"] == ("ScaledRMSNorm.scaled_rmsnorm_matches_stored_golden",)
    assert run_law(LAWS[ids["stored"][0]], impl, dtype=torch.float32, profile="ci").status == "passed"
    reasons = {axis: "a throwaway component of this test: no laws of its own" for axis in holes}
    components.unregister("ScaledRMSNorm")
    components.register(dataclasses.replace(scaled, not_applicable=reasons))
    assert matrix.unexplained() == []


def test_a_throwaway_component_gets_the_lifecycle_law_and_it_catches_a_stale_weight(scaled):
    """The lifecycle family is generic: the throwaway record gets ``scaled_rmsnorm_follows_its_module_lifecycle``,
    which the reference passes and a γ cast once at the first call (stale after a reload) fails."""
    ids = families.apply(scaled)
    assert ids["lifecycle"] == ("ScaledRMSNorm.scaled_rmsnorm_follows_its_module_lifecycle",)
    law = LAWS[ids["lifecycle"][0]]
    impl = Implementation("scaled", types.SimpleNamespace(ScaledRMSNorm=nanolm_core.RMSNorm))
    stale = Implementation("scaled-stale", types.SimpleNamespace(ScaledRMSNorm=rmsnorm_cached_weight_cast.RMSNorm))
    assert run_law(law, impl, dtype=torch.bfloat16, profile="ci").status == "passed"
    caught = run_law(law, stale, dtype=torch.bfloat16, profile="ci")
    assert caught.status == "failed" and caught.cause == "law", caught.message
