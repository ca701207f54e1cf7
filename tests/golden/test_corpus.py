"""The stored corpus and its commands: verify passes, every stored case matches the engine, tampered /
truncated / stale files are refused naming the file, regen never overwrites unless asked, bench reports."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import golden
from golden import corpus
from properties.entry.cli import main


def _case_ids(family: str) -> list[str]:
    return [c.id for c in corpus.cases(family) if not c.lazy]


@pytest.fixture(scope="module")
def stored() -> dict[str, corpus.Case]:
    return {f"{c.family}/{c.id}": c for c in corpus.iter_all()}


def test_golden_verify_passes_on_the_packaged_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["golden", "verify"]) == 0
    out = capsys.readouterr().out
    assert "golden verify: OK" in out and "rmsnorm.json" in out and "mpmath 1.3" in out


@pytest.mark.parametrize(
    "case_id",
    [f"rmsnorm/{i}" for i in _case_ids("rmsnorm")]
    + [f"swiglu/{i}" for i in _case_ids("swiglu")]
    + [f"block/{i}" for i in _case_ids("block")],
)
def test_stored_case_matches_the_engine(case_id: str, stored: dict[str, corpus.Case]) -> None:
    case = stored[case_id]
    fresh = corpus.recompute(case)
    assert corpus.compare(case, fresh) <= 2.0**-100
    for dt in corpus.DTYPE_NAMES.values():
        assert torch.equal(case.golden.rounded(dt), fresh.rounded(dt))


def test_the_corpus_covers_the_required_regimes(stored: dict[str, corpus.Case]) -> None:
    rms = [c for c in stored.values() if c.family == "rmsnorm"]
    assert {c.inputs["x"].shape[-1] for c in rms} == {1, 2, 3, 8, 123, 769, 4096, 8192}
    assert any(np.all(c.inputs["x"] == 0, axis=-1).any() for c in rms)  # a zero row
    assert any(c.dtype == torch.float16 and np.abs(c.inputs["x"]).min() > 256 for c in rms)
    blocks = [c.params["config"] for c in stored.values() if c.family == "block"]
    assert all(1 < b["n_kv_heads"] < b["n_heads"] for b in blocks)
    assert all(c.inputs["x"].shape[1] >= 5 for c in stored.values() if c.family == "block")
    llama = stored["swiglu/llama7b-row-bfloat16"]
    assert [s["shape"] for s in llama.record["inputs"].values()] == [
        [1, 4096],
        [11008, 4096],
        [11008, 4096],
        [4096, 11008],
    ]
    prov = json.loads((corpus.DATA_DIR / "rmsnorm.json").read_text())["provenance"]
    assert {"mpmath", "engine_prec_bits", "validation_prec_bits"} <= set(prov) and prov["engine_prec_bits"] >= 100


def test_recipe_values_are_pinned() -> None:
    """The recipe turns PCG64 raw words into values by exact arithmetic: these numbers must never change."""
    assert corpus.recipe_values(1, [6], "bfloat16", 1.0).tolist() == [
        0.041015625,
        1.5625,
        -1.234375,
        1.5546875,
        -0.65234375,
        -0.265625,
    ]


# ------------------------------------------------------------------------------- tamper detection
@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    shutil.copytree(corpus.DATA_DIR, d, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
    return d


def _refused(data: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["golden", "verify", "--data", str(data), "--sample", "0"]) == 1
    return capsys.readouterr().err


def test_a_modified_file_is_refused_naming_it(data_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = data_copy / "rmsnorm.json"
    text = p.read_text()
    i = text.index('"decimal":["') + len('"decimal":["') + 3
    p.write_text(text[:i] + ("7" if text[i] != "7" else "8") + text[i + 1 :])
    err = _refused(data_copy, capsys)
    assert "rmsnorm.json" in err and "sha256" in err


def test_a_modified_case_is_refused_even_with_a_fixed_manifest(
    data_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = data_copy / "swiglu.json"
    text = p.read_text()
    i = text.index('"hex":["0x1.') + len('"hex":["0x1.')
    p.write_text(text[:i] + ("f" if text[i] != "f" else "e") + text[i + 1 :])
    corpus.write_manifest(data_copy, "tampered")
    err = _refused(data_copy, capsys)
    assert "swiglu.json" in err and "case" in err


def test_a_truncated_file_is_refused_naming_it(data_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = data_copy / "block.json"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    assert "block.json" in _refused(data_copy, capsys)
    corpus.write_manifest(data_copy, "tampered")  # even with a matching manifest: not valid JSON
    err = _refused(data_copy, capsys)
    assert "block.json" in err and "truncated" in err


def test_a_stale_version_is_refused_with_a_hint(data_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = data_copy / "block.json"
    p.write_text(p.read_text().replace('"format_version": 1', '"format_version": 0', 1))
    corpus.write_manifest(data_copy, "old")
    err = _refused(data_copy, capsys)
    assert "block.json" in err and "stale" in err and "regen" in err


def test_regen_refuses_to_overwrite_without_force(data_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (data_copy / "rmsnorm.json").read_bytes()
    assert main(["golden", "regen", "--data", str(data_copy)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (data_copy / "rmsnorm.json").read_bytes() == before


def test_regen_reproduces_the_stored_block_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fresh"
    assert main(["golden", "regen", "--data", str(out), "--family", "block"]) == 0
    assert main(["golden", "verify", "--data", str(out)]) == 0
    fresh = json.loads((out / "block.json").read_text())["cases"]
    stored = json.loads((corpus.DATA_DIR / "block.json").read_text())["cases"]
    assert [c["golden_sha256"] for c in fresh] == [c["golden_sha256"] for c in stored]
    assert [c["inputs_sha256"] for c in fresh] == [c["inputs_sha256"] for c in stored]


def test_bench_reports_in_the_documented_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["golden", "bench", "--dim", "64", "--hidden", "160", "--slice", "4"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(
        r"golden-bench: swiglu D=64 F=160: [\d.]+ s; naive mpmath ~ [\d.]+ s; ratio \d+; "
        r"numpy fp64 [\d.]+ s",
        last,
    ), last


def test_corpus_goldens_are_usable_as_golden_objects(stored: dict[str, corpus.Case]) -> None:
    case = stored["rmsnorm/D2-scales-float32"]
    assert isinstance(case.golden, golden.Golden)
    assert case.golden.rounded(torch.float32).shape == case.tensor("x").shape
