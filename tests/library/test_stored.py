"""The corpus serves verdicts: the stored-golden laws refuse a corrupted or incomplete corpus with one line
naming the file (an error of the suite's data, exit 1 from check), never a traceback and never "OK: 0 cases"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden import corpus
from properties.commands.check import exit_status
from properties.library.laws import LAWS
from properties.running.loading import load
from properties.running.runner import run_law

LAW = "RMSNorm.rmsnorm_matches_stored_golden"


def _run() -> object:
    return run_law(LAWS[LAW], load("nanolm_core"), dtype="fp32", profile="ci")


def test_the_intact_copy_serves_a_verdict(corpus_copy):
    result = _run()
    assert result.status == "passed" and result.examples >= 1, result.message


@pytest.mark.parametrize(
    ("damage", "fragment"),
    [
        (lambda d: (d / corpus.MANIFEST).write_text("{not json"), corpus.MANIFEST),
        (lambda d: (d / corpus.MANIFEST).unlink(), corpus.MANIFEST),
        (lambda d: _edit_manifest(d, lambda m: m["files"].pop("rmsnorm.json", None) or m), "rmsnorm"),
        (lambda d: _append(d / "rmsnorm.json", " "), "rmsnorm.json"),
        (lambda d: (d / "rmsnorm.json").write_text(""), "rmsnorm.json"),
    ],
    ids=["manifest-not-json", "manifest-missing", "family-not-listed", "file-tampered", "file-truncated"],
)
def test_a_damaged_corpus_is_a_one_line_suite_error_naming_the_file(corpus_copy, damage, fragment):
    damage(corpus_copy)
    result = _run()
    assert result.status == "error", result.message
    assert result.message.startswith("stored golden corpus unusable: ") and fragment in result.message
    assert "\n" not in result.message and "Traceback" not in result.message
    assert exit_status([result]) == 1


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def _edit_manifest(data: Path, change) -> None:
    path = data / corpus.MANIFEST
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
