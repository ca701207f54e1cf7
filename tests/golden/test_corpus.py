"""The stored corpus and its commands: verify passes, every stored case matches the engine, the corpus covers the
model sizes and long sequences, tampered / truncated / stale / malformed files and manifests are refused with one
line naming the file, regen never overwrites unless asked, the generator reproduces what is stored, bench reports."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import golden
from golden import corpus
from golden.formats import FORMATS
from properties.entry.cli import main

generate = importlib.import_module("golden.data.generate")


def _ids(family: str, keep: Callable[[corpus.Case], bool]) -> list[str]:
    return [f"{family}/{c.id}" for c in corpus.cases(family) if keep(c)]


def _cheap(c: corpus.Case) -> bool:
    """Recomputed in the default run: every case but the SwiGLU model shapes and the long Block sequences."""
    return c.cost <= 100_000 and not (c.family == "block" and c.shape("x")[1] > 64)


@pytest.fixture(scope="module")
def stored() -> dict[str, corpus.Case]:
    return {f"{c.family}/{c.id}": c for c in corpus.iter_all()}


def test_golden_verify_passes_on_the_packaged_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["golden", "verify"]) == 0
    out = capsys.readouterr().out
    assert "golden verify: OK" in out and "rmsnorm.json" in out and "mpmath 1.3" in out


def _matches_the_engine(case: corpus.Case, rows: np.ndarray | None = None) -> None:
    """The engine recomputes the case (at ``rows`` of the flattened positions only) and agrees with the store."""
    if rows is None:
        fresh, stored = corpus.recompute(case), case.golden
        assert corpus.compare(case, fresh) <= 2.0**-100
    else:  # normwise per row: each sum is certified to 2^-100 of itself, and an output that cancels the residual
        # stream (out = h + ffn, |out| ≪ |h|) inherits |h|/|out| times that; two such values lie ≤ 2·2^-100 apart
        fresh, stored = corpus.recompute(case, rows=rows), case.golden
        flat = {k: getattr(stored, k).reshape(-1, stored.shape[-1])[rows] for k in ("hi", "lo")}
        stored = dataclasses.replace(stored, **flat)
        apart = np.abs((stored.hi - fresh.hi) + (stored.lo - fresh.lo)).max(axis=-1)
        assert np.all(apart <= 2.0**-99 * np.abs(fresh.hi).max(axis=-1))
    for f in FORMATS:
        assert torch.equal(stored.rounded(f.dtype), fresh.rounded(f.dtype))


@pytest.mark.parametrize("case_id", [i for fam in corpus.FAMILIES for i in _ids(fam, _cheap)])
def test_stored_case_matches_the_engine(case_id: str, stored: dict[str, corpus.Case]) -> None:
    _matches_the_engine(stored[case_id])


@pytest.mark.slow
@pytest.mark.parametrize("case_id", [i for fam in corpus.FAMILIES for i in _ids(fam, lambda c: not _cheap(c))])
def test_stored_large_case_matches_the_engine(case_id: str, stored: dict[str, corpus.Case]) -> None:
    """A Block at T ≥ 1024 is recomputed at 9 positions of each sequence, the last among them (every key counts
    at each; the whole T = 4096 case costs the mpmath engine minutes: a time budget, not a check)."""
    case = stored[case_id]
    if case.family == "block" and case.shape("x")[1] >= 1024:
        B, T = case.shape("x")[:2]
        _matches_the_engine(case, np.unique([b * T + t for b in range(B) for t in (*range(0, T, T // 8), T - 1)]))
    else:
        _matches_the_engine(case)


def test_the_corpus_covers_the_required_regimes(stored: dict[str, corpus.Case]) -> None:
    rms = [c for c in stored.values() if c.family == "rmsnorm"]
    assert {c.shape("x")[-1] for c in rms} == {1, 2, 3, 8, 123, 769, 2048, 4096, 5120, 8192, 16384}
    for D in (2048, 4096, 5120, 8192, 16384):  # model sizes: every dtype, two rows of different regimes
        at_d = [c for c in rms if c.shape("x")[-1] == D]
        assert {c.dtype for c in at_d} == {f.dtype for f in FORMATS} and all(c.shape("x")[0] == 2 for c in at_d)
        assert {r for c in at_d for r in c.id.split("-")[1:3]} == {"mean", "outlier", "constant", "small"}
    assert any(np.all(c.inputs["x"] == 0, axis=-1).any() for c in rms)  # a zero row
    assert any(c.dtype == torch.float16 and np.abs(c.inputs["x"]).min() > 256 for c in rms)
    constant = stored["rmsnorm/D16384-constant-small-float32"].inputs["x"][0]
    assert np.all(constant == constant[0])
    assert max(np.abs(c.inputs["x"]).max() for c in rms if c.dtype == torch.float16) < 65504
    blocks = [c for c in stored.values() if c.family == "block"]
    assert all(1 < b.config.n_kv_heads < b.config.n_heads for b in blocks)
    assert all(c.shape("x")[1] >= 5 for c in blocks)
    long = [c for c in blocks if c.shape("x")[1] >= 1024]
    assert {c.config.rope_theta for c in long} == {10000.0, 500000.0}
    assert {c.dtype for c in long} >= {torch.float32, torch.bfloat16}
    shapes = {c.id: (c.shape("w_gate"), c.dtype) for c in stored.values() if c.family == "swiglu"}
    assert shapes["llama7b-row-bfloat16"] == ((11008, 4096), torch.bfloat16)
    assert shapes["llama3-8b-row-bfloat16"] == ((14336, 4096), torch.bfloat16)
    assert {dt for (F, _), dt in shapes.values() if F == 28672} == {torch.bfloat16, torch.float32}
    prov = json.loads((corpus.DATA_DIR / "swiglu.json").read_text())["provenance"]
    assert {"mpmath", "engine_prec_bits", "validation_prec_bits"} <= set(prov) and prov["engine_prec_bits"] >= 100


def test_every_case_below_60k_inputs_was_validated_in_full(stored: dict[str, corpus.Case]) -> None:
    for case in stored.values():
        v = case.record["validation"]
        assert v["sum_bound_rel"] <= 2.0**-100
        if case.cost < generate.FULL_VALIDATION:
            assert v["validated"] == "full" and v["full_check_rel"] <= 2.0**-100, case.id


# ------------------------------------------------------------------------------------------ the API
def test_cases_gives_exact_tensors_params_and_goldens() -> None:
    rms = corpus.cases("rmsnorm")
    case = next(c for c in rms if c.id == "D2-scales-float32")
    x = case.tensor("x")
    assert x.dtype == case.dtype == torch.float32 and x.device.type == "cpu"
    assert np.array_equal(x.double().numpy(), case.inputs["x"]) and case.params["eps"] == 1e-6
    assert isinstance(case.golden, golden.Golden) and case.golden.shape == tuple(x.shape)
    assert case.golden.rounded(case.dtype).shape == x.shape and case.description
    large = next(c for c in rms if c.id == "D16384-mean-outlier-bfloat16")
    assert large.lazy and large._inputs is None and large._golden is None  # decoded when first used
    assert large.tensor("weight").dtype == torch.bfloat16 and large.golden.shape == (2, 16384)
    blk = corpus.cases("block")[0]
    assert blk.config.dim == blk.shape("x")[-1] and set(blk.inputs) == {"x", *golden.BLOCK_PARAMS}


def test_cases_of_an_unknown_family_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown corpus family 'layernorm'"):
        corpus.cases("layernorm")


def _reference_decode(s: str) -> tuple[float, float]:
    if s in ("nan", "inf", "-inf"):
        return float(s), 0.0
    f = Fraction(Decimal(s))
    h = float(f)
    return h, float(f - Fraction(h))


def _strings() -> list[str]:
    rng = np.random.default_rng(11)
    out = []
    for _ in range(2000):
        h = float(rng.standard_normal() * 10.0 ** rng.integers(-320, 308))
        lo = float(np.spacing(h)) * float(rng.choice([0.5, 0.25, -0.5, 0.5 + 2**-40, 0.0, 1e-3, -0.4999999]))
        out.append(corpus.encode_decimal(np.array([h]), np.array([lo]))[0])
        out.append(format(Decimal(h) + Decimal(lo), ".33e"))  # 2-digit exponents too
    return [
        *out,
        "0.000000000000000000000000000000000e+33",
        "-0.000000000000000000000000000000000e+0",
        "nan",
        "inf",
        "-inf",
        "1.000000000000000000000000000000000e+22",
        "5.000000000000000000000000000000000e-1",
        "4.940656458412465441765687928682213e-324",
        "1.797693134862315708145274237317044e+308",
        "2.225073858507201383090232717332404e-308",
        "1.5",
        "-2e-3",
        "1.00000000000000000000000000000000000001e0",  # more digits than stored
    ]


def test_golden_values_decode_exactly() -> None:
    """The vectorised decoder gives hi = RN(v) and lo = RN(v − hi) exactly as exact rational arithmetic does."""
    values = _strings() + [s for c in corpus.cases("swiglu") if not c.lazy for s in c.record["golden"]["decimal"]]
    g = corpus.decode_decimal(values, [len(values)])
    for s, h, lo in zip(values, g.hi.tolist(), g.lo.tolist(), strict=True):
        rh, rl = _reference_decode(s)
        assert (h, lo) == (rh, rl) or (math.isnan(h) and math.isnan(rh)), s


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
    rows = corpus.recipe_values(1, [2, 3], "bfloat16", [1.0, 0.0], [0.0, 0.7], [(1, 1e3)])
    assert rows.tolist() == [[0.041015625, 1000.0, -1.234375], [0.69921875, 0.69921875, 0.69921875]]


# ------------------------------------------------------------------------------- refusing bad corpora
@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A small corpus (the two cheapest cases of each family from the packaged one) with its manifest."""
    d = tmp_path / "data"
    d.mkdir()
    for fam in corpus.FAMILIES:
        doc = json.loads((corpus.DATA_DIR / f"{fam}.json").read_text())
        records = sorted(doc.pop("cases"), key=lambda r: sum(math.prod(s["shape"]) for s in r["inputs"].values()))
        header = {k: v for k, v in doc.items() if k not in ("magic", "format_version", "family", "n_cases")}
        corpus.write_family(d / f"{fam}.json", fam, header, records[:2])
    corpus.write_manifest(d, "test")
    return d


def _manifest(d: Path, edit: Callable[[dict[str, Any]], Any]) -> None:
    p = d / corpus.MANIFEST
    doc = json.loads(p.read_text())
    edit(doc)
    p.write_text(json.dumps(doc))


def _refusal(d: Path, family: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The one-line CorpusError of cases(family), and the same refusal from `golden verify` (exit 1, no OK)."""
    with pytest.raises(corpus.CorpusError) as exc:
        corpus.cases(family, d, pinned=False)  # (a small corpus: not the pinned one, nor every case of the recipe)
    msg = str(exc.value)
    assert "\n" not in msg and "regen" in msg, msg
    assert main(["golden", "verify", "--data", str(d), "--sample", "0", "--unpinned"]) == 1
    out, err = capsys.readouterr()
    assert "OK" not in out and "Traceback" not in err and err.count("\n") == 1 and "REFUSED" in err, err
    return msg


BAD_MANIFESTS: dict[str, tuple[Callable[[Path], None], str]] = {
    "missing": (lambda d: (d / corpus.MANIFEST).unlink(), "MANIFEST.json: missing"),
    "not JSON": (lambda d: (d / corpus.MANIFEST).write_text('{"magic": "nanolm'), "MANIFEST.json: not valid JSON"),
    "not an object": (lambda d: (d / corpus.MANIFEST).write_text("[]"), "MANIFEST.json: not a nanolm-verify"),
    "stale": (lambda d: _manifest(d, lambda m: m.update(format_version=0)), "MANIFEST.json: format version 0"),
    "no files key": (lambda d: _manifest(d, lambda m: m.pop("files")), "MANIFEST.json: 'files' must map"),
    "files a list": (lambda d: _manifest(d, lambda m: m.update(files=[])), "MANIFEST.json: 'files' must map"),
    "lists no files": (lambda d: _manifest(d, lambda m: m.update(files={})), "MANIFEST.json: lists no files"),
    "omits a family": (
        lambda d: _manifest(d, lambda m: m["files"].pop("swiglu.json")),
        "MANIFEST.json: does not list swiglu.json",
    ),
    "unknown file": (
        lambda d: _manifest(d, lambda m: m["files"].update({"x.json": m["files"]["block.json"]})),
        "MANIFEST.json: lists unknown files 'x.json'",
    ),
    "sha256 not hex": (
        lambda d: _manifest(d, lambda m: m["files"]["rmsnorm.json"].update(sha256=12)),
        "MANIFEST.json: entry for rmsnorm.json must be",
    ),
    "bytes a string": (
        lambda d: _manifest(d, lambda m: m["files"]["block.json"].update(bytes="100")),
        "MANIFEST.json: entry for block.json must be",
    ),
    "entry not an object": (
        lambda d: _manifest(d, lambda m: m["files"].update({"swiglu.json": "abc"})),
        "MANIFEST.json: entry for swiglu.json must be",
    ),
}


@pytest.mark.parametrize("problem", list(BAD_MANIFESTS))
def test_a_bad_manifest_is_refused_naming_it(problem: str, tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spoil, message = BAD_MANIFESTS[problem]
    spoil(tiny)
    assert message in _refusal(tiny, "rmsnorm", capsys)


def _flip_one_digit(p: Path) -> None:
    text = p.read_text()
    i = text.index('"decimal":["') + len('"decimal":["') + 3  # a digit of the first golden value
    p.write_text(text[:i] + ("7" if text[i] != "7" else "8") + text[i + 1 :])


BAD_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "missing": (lambda d: (d / "swiglu.json").unlink(), "swiglu.json: listed in MANIFEST.json but missing"),
    "truncated": (
        lambda d: (d / "swiglu.json").write_bytes((d / "swiglu.json").read_bytes()[:-100]),
        "bytes, MANIFEST.json records",
    ),
    "tampered": (lambda d: _flip_one_digit(d / "swiglu.json"), "swiglu.json: sha256"),
}


@pytest.mark.parametrize("problem", list(BAD_FILES))
def test_a_bad_family_file_is_refused_naming_it(problem: str, tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spoil, message = BAD_FILES[problem]
    spoil(tiny)
    msg = _refusal(tiny, "swiglu", capsys)
    assert "swiglu.json" in msg and message in msg, msg


def _family(d: Path, fam: str, edit: Callable[[dict[str, Any]], Any]) -> None:
    """Edit a family file and re-sign it in the manifest (only the per-case checks can catch the edit)."""
    p = d / f"{fam}.json"
    doc = json.loads(p.read_text())
    edit(doc)
    p.write_text(json.dumps(doc))
    corpus.write_manifest(d, "edited")


BAD_RECORDS: dict[str, tuple[str, Callable[[dict[str, Any]], Any], str]] = {
    "no cases": ("block", lambda doc: doc.update(cases=[], n_cases=0), "lists no cases"),
    "case count": ("block", lambda doc: doc.update(n_cases=5), "2 cases, header says 5"),
    "wrong family": ("block", lambda doc: doc.update(family="swiglu"), "holds family 'swiglu'"),
    "stale": ("block", lambda doc: doc.update(format_version=0), "the file is stale"),
    "unknown dtype": ("rmsnorm", lambda doc: doc["cases"][0].update(dtype="float8"), "dtype 'float8'"),
    "duplicate id": ("rmsnorm", lambda doc: doc["cases"][1].update(id=doc["cases"][0]["id"]), "not unique"),
    "no golden": ("swiglu", lambda doc: doc["cases"][0].pop("golden"), "'golden' needs"),
    "short golden": ("swiglu", lambda doc: doc["cases"][0]["golden"]["decimal"].pop(), "decimal strings for shape"),
    "bad shape": ("swiglu", lambda doc: doc["cases"][0]["inputs"]["x"].update(shape=[-1, 2]), "needs a 'shape'"),
    "missing input": ("swiglu", lambda doc: doc["cases"][0]["inputs"].pop("w_up"), "are not the swiglu inputs"),
    "hex count": ("rmsnorm", lambda doc: doc["cases"][0]["inputs"]["weight"]["hex"].pop(), "must hold"),
    "golden not a string": (
        "rmsnorm",
        lambda doc: doc["cases"][0]["golden"]["decimal"].__setitem__(0, 0.5),
        "golden values cannot be decoded",
    ),
    "modified input": (
        "rmsnorm",
        lambda doc: doc["cases"][0]["inputs"]["x"]["hex"].__setitem__(0, "0x1.8p+0"),
        "inputs do not hash",
    ),
    "modified golden": (
        "rmsnorm",
        lambda doc: doc["cases"][0]["golden"]["decimal"].__setitem__(0, "1.5e0"),
        "golden values do not hash",
    ),
}


@pytest.mark.parametrize("problem", list(BAD_RECORDS))
def test_a_malformed_case_is_refused_even_with_a_fixed_manifest(
    problem: str, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fam, edit, message = BAD_RECORDS[problem]
    _family(tiny, fam, edit)
    msg = _refusal(tiny, fam, capsys)
    assert f"{fam}.json" in msg and message in msg, msg


def _big_case() -> dict[str, Any]:
    doc = json.loads((corpus.DATA_DIR / "rmsnorm.json").read_text())
    return next(r for r in doc["cases"] if r["id"] == "D2048-mean-outlier-bfloat16")


def test_a_modified_recipe_is_refused_when_loaded(tiny: Path) -> None:
    """(It was refused only when its values were generated and hashed; the generator's recipe says it first.)"""
    big = _big_case()
    big["inputs"]["x"]["recipe"]["seed"] += 1
    _family(tiny, "rmsnorm", lambda d: d.update(cases=[*d["cases"], big], n_cases=3))
    with pytest.raises(corpus.CorpusError, match="D2048-mean-outlier-bfloat16.*recipe .* is not the generator's"):
        corpus.cases("rmsnorm", tiny, pinned=False)


def test_a_recipe_case_whose_values_do_not_hash_is_refused_when_used(tiny: Path) -> None:
    big = _big_case()
    big["inputs_sha256"] = "0" * 64
    _family(tiny, "rmsnorm", lambda d: d.update(cases=[*d["cases"], big], n_cases=3))
    case = corpus.cases("rmsnorm", tiny, pinned=False)[-1]
    assert case.lazy
    with pytest.raises(corpus.CorpusError, match="D2048-mean-outlier-bfloat16.*inputs do not hash"):
        _ = case.inputs


# ------------------------------------------------------------------------------ a corpus that cannot be swapped
def _regolden(rec: dict[str, Any], value: str) -> None:
    """Set a case's first golden value and re-hash it (golden_sha256): only the pin or the recipe can tell."""
    rec["golden"]["decimal"][0] = value
    g = corpus.decode_decimal(rec["golden"]["decimal"], rec["golden"]["shape"])
    rec["golden_sha256"] = corpus.sha256_arrays({"hi": g.hi, "lo": g.lo})


def _case(doc: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(r for r in doc["cases"] if r["id"] == case_id)


def _huge(doc: dict[str, Any]) -> None:
    _case(doc, "llama7b-row-bfloat16")["inputs"]["x"]["shape"] = [10**6, 4096]  # a recipe: nothing to store


# tampering → (family, its edit of the family document, the law that reads it, dtype, what the recipe check says)
TAMPERS: dict[str, tuple[str, Callable[[dict[str, Any]], Any], str, str, str | None]] = {
    "golden changed, re-hashed": (
        "rmsnorm", lambda doc: _regolden(_case(doc, "D1-eps-dominated-bfloat16"), "1.5e0"),
        "RMSNorm.rmsnorm_matches_stored_golden", "bf16", None,  # (a reviewed re-pin: golden verify recomputes it)
    ),
    "NaN golden, re-hashed": (
        "rmsnorm", lambda doc: _regolden(_case(doc, "D1-eps-dominated-bfloat16"), "nan"),
        "RMSNorm.rmsnorm_matches_stored_golden", "bf16", "golden value at (0, 0) is nan, not finite",
    ),
    "case list cut from 10 to 3": (
        "block", lambda doc: doc.update(cases=doc["cases"][:3], n_cases=3),
        "Block.block_matches_stored_golden", "fp64", "lacks 7 case(s) of the recipe",
    ),
    "huge recipe shape": (
        "swiglu", _huge, "SwiGLU.swiglu_matches_stored_golden", "bf16",
        "input x has shape [1000000, 4096] where the recipe has [1, 4096]",
    ),
}  # fmt: skip


def _tamper(copy: Path, problem: str) -> None:
    """Apply a tampering and re-sign the manifest: the copy vouches for itself again."""
    family, edit, *_ = TAMPERS[problem]
    path = copy / f"{family}.json"
    doc = json.loads(path.read_text())
    edit(doc)
    header = {k: v for k, v in doc.items() if k not in ("magic", "format_version", "family", "n_cases", "cases")}
    corpus.write_family(path, family, header, doc["cases"])
    corpus.write_manifest(copy, "tampered")


def _law_verdict(problem: str) -> Any:
    from properties.library.laws import LAWS
    from properties.running.loading import load
    from properties.running.runner import run_law

    _, _, law_id, dtype, _ = TAMPERS[problem]
    return run_law(LAWS[law_id], load("nanolm_core"), dtype=dtype, profile="ci")


def test_the_copy_of_the_packaged_corpus_is_the_pinned_one(
    corpus_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert corpus.file_sha256(corpus_copy / corpus.MANIFEST) == corpus.MANIFEST_SHA256
    assert main(["golden", "verify", "--data", str(corpus_copy), "--sample", "0"]) == 0
    assert _law_verdict("case list cut from 10 to 3").status == "passed"


@pytest.mark.parametrize("problem", list(TAMPERS))
def test_a_swapped_corpus_is_refused_by_the_pin_as_the_suite_s_error(
    problem: str, corpus_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Re-hashed so that its own manifest vouches for it: golden verify refuses it (exit 1), and a law reading it
    is an error of the suite's data — never a failure of the (correct) reference, never a pass on fewer cases."""
    _tamper(corpus_copy, problem)
    assert main(["golden", "verify", "--data", str(corpus_copy), "--sample", "0"]) == 1
    err = capsys.readouterr().err
    assert "REFUSED" in err and "is not the corpus this version pins" in err and err.count("\n") == 1, err
    result = _law_verdict(problem)
    assert result.status == "error" and result.cause is None, (result.status, result.message)
    assert result.message.startswith("stored golden corpus unusable: ") and "pins" in result.message


@pytest.mark.parametrize("problem", [p for p, t in TAMPERS.items() if t[4]])
def test_a_re_pinned_swap_is_still_refused_by_the_recipe(
    problem: str, corpus_copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pin updated with the swap (a careless review): every case, dtype and shape of generate.py's recipe and
    finite goldens are still required — by golden verify and by the law, as the suite's error."""
    _tamper(corpus_copy, problem)
    monkeypatch.setattr(corpus, "MANIFEST_SHA256", corpus.file_sha256(corpus_copy / corpus.MANIFEST))
    said = TAMPERS[problem][4]
    assert main(["golden", "verify", "--data", str(corpus_copy), "--sample", "0"]) == 1
    err = capsys.readouterr().err
    assert "REFUSED" in err and said in err and err.count("\n") == 1, err
    result = _law_verdict(problem)
    assert result.status == "error" and said in result.message, (result.status, result.message)


def test_a_re_pinned_changed_golden_fails_golden_verify(
    corpus_copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finite, re-hashed, re-pinned golden change of a cheap case: golden verify recomputes it and fails."""
    _tamper(corpus_copy, "golden changed, re-hashed")
    monkeypatch.setattr(corpus, "MANIFEST_SHA256", corpus.file_sha256(corpus_copy / corpus.MANIFEST))
    assert main(["golden", "verify", "--data", str(corpus_copy)]) == 1
    assert "D1-eps-dominated-bfloat16" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------- regen
def test_regen_refuses_to_overwrite_without_force(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (tiny / "rmsnorm.json").read_bytes()
    assert main(["golden", "regen", "--data", str(tiny)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (tiny / "rmsnorm.json").read_bytes() == before


def test_regen_of_one_family_needs_the_others_beside_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["golden", "regen", "--data", str(tmp_path / "new"), "--family", "block"]) == 2
    err = capsys.readouterr().err
    assert "rmsnorm.json" in err and "swiglu.json" in err and err.count("\n") == 1
    assert not (tmp_path / "new").exists()


def test_regen_of_one_family_rewrites_it_and_the_manifest(
    tiny: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first_two = generate.GENERATORS["block"]
    monkeypatch.setitem(generate.GENERATORS, "block", lambda: list(first_two())[:2])  # (skip the long sequences)
    others = {f: (tiny / f"{f}.json").read_bytes() for f in ("rmsnorm", "swiglu")}
    assert main(["golden", "regen", "--data", str(tiny), "--family", "block", "--force"]) == 0
    assert main(["golden", "verify", "--data", str(tiny)]) == 1  # a regenerated corpus is not the pinned one …
    assert "is not the corpus this version pins" in capsys.readouterr().err
    assert main(["golden", "verify", "--data", str(tiny), "--unpinned"]) == 0  # … until its pin is updated
    assert all((tiny / f"{f}.json").read_bytes() == b for f, b in others.items())
    ids = [c.id for c in corpus.cases("block", tiny, pinned=False)]
    assert ids == ["D32-H4-G2-T6-bfloat16", "D32-H8-G4-T5-float32"]


@pytest.mark.parametrize("family", corpus.FAMILIES)
def test_the_generator_reproduces_the_stored_cases(family: str) -> None:
    """Inputs and their hashes regenerate bit for bit, goldens to the engine's contract: within 2^-100 and with the
    same correct rounding in every format (the cheap cases and one model-sized RMSNorm). The digits past 2^-100
    depend on how the engine groups its exact partial sums, so a faster engine may change them."""
    stored = {r["id"]: r for r in json.loads((corpus.DATA_DIR / f"{family}.json").read_text())["cases"]}
    specs = list(generate.GENERATORS[family]())
    picked = specs[:2] + [s for s in specs if s["id"] == "D16384-outlier-constant-float16"]
    for spec in picked:
        fresh, old = generate._record(family, spec), stored[spec["id"]]
        assert {k: fresh[k] for k in ("inputs", "inputs_sha256")} == {k: old[k] for k in ("inputs", "inputs_sha256")}
        a, b = (corpus.decode_decimal(r["golden"]["decimal"], r["golden"]["shape"]) for r in (fresh, old))
        assert np.all(np.abs((a.hi - b.hi) + (a.lo - b.lo)) <= 2.0**-100 * np.abs(b.hi)), spec["id"]
        assert all(torch.equal(a.rounded(f.dtype), b.rounded(f.dtype)) for f in FORMATS), spec["id"]


# --------------------------------------------------------------------------------------------- bench
def test_bench_reports_in_the_documented_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["golden", "bench", "--dim", "64", "--hidden", "160", "--slice", "4"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(
        r"golden-bench: swiglu D=64 F=160: [\d.]+ s; previous method [\d.]+ s, ratio [\d.]+; naive mpmath ~ [\d.]+ s; "
        r"ratio \d+; "
        r"numpy fp64 [\d.]+ s",
        last,
    ), last


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["golden", "bench", "--dim", "0"], "--dim"),
        (["golden", "bench", "--hidden", "-3"], "--hidden"),
        (["golden", "bench", "--slice", "x"], "--slice"),
        (["golden", "verify", "--sample", "-1"], "--sample"),
        (["golden", "verify", "--data", "/nonexistent/corpus"], "--data"),
        (["golden", "regen", "--data", __file__], "--data"),
        (["golden", "regen", "--family", "layernorm"], "--family"),
        (["golden", "nonsense"], "ACTION"),
        (["golden"], "action"),
    ],
)
def test_bad_arguments_exit_2_with_one_line_naming_them(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(argv))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and named in err, err
