"""Expectation files: parsing, matching, status mapping, warnings about stale entries and unexpected passes."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from properties.running import expectations as ex
from properties.running.runner import LAWS, LawResult

TEXT = """
# HF computes fp64 input in fp32
RMSNorm.*[fp64]                        xfail  computes in fp32 (huggingface/transformers#30236 style cast)
Block.block_matches_golden[bf16-cuda]  skip   hangs on this kernel
SwiGLU.swiglu_is_*[*-cpu]              xfail  known on CPU
"""
LAW_IDS = [
    "RMSNorm.rmsnorm_matches_golden",
    "RMSNorm.rmsnorm_is_scale_invariant",
    "Block.block_matches_golden",
    "SwiGLU.swiglu_is_odd_free",
]


def result(law_id: str, dtype: str = "fp64", device: str = "cpu", status: str = "failed") -> LawResult:
    return LawResult(law_id, law_id.split(".")[0], dtype, device, status, message="boom", max_ulp=3.0)


@pytest.fixture
def entries():
    return ex.parse(TEXT, source="t.txt")


def test_parse_reads_patterns_actions_reasons_and_lines(entries):
    first = entries[0]
    assert (first.law, first.dtype, first.device, first.action) == ("RMSNorm.*", "fp64", "*", "xfail")
    assert first.reason.endswith("#30236 style cast)")  # an inline '#' belongs to the reason
    assert (first.source, first.line) == ("t.txt", 3)
    assert entries[1].pattern == "Block.block_matches_golden[bf16-cuda]"
    assert (entries[2].dtype, entries[2].device) == ("*", "cpu")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("RMSNorm.x[fp64] maybe  reason", "unknown action 'maybe'"),
        ("RMSNorm.x[fp64] xfail", "needs a reason"),
        ("[fp64] xfail why", "cannot parse"),
    ],
)
def test_bad_lines_name_the_file_and_line(line, message):
    with pytest.raises(ex.ExpectationError, match=rf"f\.txt:2: .*{message}"):
        ex.parse("# header\n" + line, source="f.txt")


def test_matching_is_by_glob_on_law_dtype_and_device(entries):
    assert ex.find(entries, "RMSNorm.rmsnorm_matches_golden", "fp64", "cuda") is entries[0]
    assert ex.find(entries, "RMSNorm.rmsnorm_matches_golden", "fp32", "cpu") is None
    assert ex.find(entries, "Block.block_matches_golden", "bf16", "cpu") is None
    assert ex.find(entries, "SwiGLU.swiglu_is_odd_free", "fp16", "cpu") is entries[2]


def test_apply_maps_failed_to_xfailed_and_keeps_the_original_message(entries):
    [out] = ex.apply([result("RMSNorm.rmsnorm_matches_golden")], "x", entries, warn=False)
    assert out.status == "xfailed"
    assert out.message.startswith("expected failure (t.txt:3): computes in fp32") and out.message.endswith("boom")
    assert out.max_ulp == 3.0  # the measurement is kept for reports and baselines


def test_apply_reports_an_unexpected_pass(entries):
    with pytest.warns(ex.ExpectationWarning, match="passed but is expected to fail"):
        [out] = ex.apply([result("RMSNorm.rmsnorm_matches_golden", status="passed")], "x", entries[:1])
    assert out.status == "xpassed"


def test_apply_skips_and_offers_the_reason_before_running(entries):
    [out] = ex.apply([result("Block.block_matches_golden", "bf16", "cuda", "passed")], "x", entries, warn=False)
    assert (out.status, out.message) == ("skipped", "expected skip (t.txt:4): hangs on this kernel")
    assert ex.skip_reason(entries, "Block.block_matches_golden", "bf16", "cuda").endswith("hangs on this kernel")
    assert ex.skip_reason(entries, "RMSNorm.rmsnorm_matches_golden", "fp64", "cpu") is None  # xfail: still run


def test_errors_and_unmatched_results_are_left_alone(entries):
    error = result("RMSNorm.rmsnorm_matches_golden", status="error")
    other = result("SwiGLU.swiglu_matches_golden", "fp32")
    assert ex.apply([error, other], "x", entries, warn=False) == [error, other]


def test_apply_does_not_modify_the_callers_results(entries):
    original = result("RMSNorm.rmsnorm_matches_golden")
    snapshot = dataclasses.replace(original)
    ex.apply([original], "x", entries, warn=False)
    assert original == snapshot


def test_entries_that_match_no_law_are_warned_about():
    stale = ex.parse("RMSNorm.renamed_law  xfail  was renamed\nRMSNorm.*  xfail  fine", source="s.txt")
    assert [e.law for e in ex.unmatched(stale, LAW_IDS)] == ["RMSNorm.renamed_law"]
    with pytest.warns(ex.ExpectationWarning, match=r"s\.txt:1: expectation RMSNorm\.renamed_law\[\*-\*\] matches no"):
        ex.apply([result("RMSNorm.rmsnorm_matches_golden")], "x", stale)


def test_expectation_files_are_found_by_short_id_or_module():
    assert ex.path_for("hf-llama").name == "hf-llama.txt"
    assert ex.path_for("properties.adapters.hf_llama").name == "hf-llama.txt"
    assert ex.path_for("nanolm_core").name == "reference.txt"
    assert ex.path_for("mypkg.norms").name == "mypkg.norms.txt"
    assert ex.load("no-such-implementation") == []


def test_summarize_counts_statuses():
    rs = [result("a.b", status=s) for s in ("passed", "xfailed", "xfailed", "skipped")]
    assert ex.summarize(rs) == {"passed": 1, "xfailed": 2, "skipped": 1}


SHIPPED = sorted(ex.DIRECTORY.glob("*.txt"))


def test_the_shipped_expectations_folder_explains_itself():
    assert (ex.DIRECTORY / "README.md").is_file()  # why a finding is a declaration or an expectation


@pytest.mark.skipif(not SHIPPED, reason="no expectation file is shipped: every finding is a declared convention")
@pytest.mark.parametrize("path", SHIPPED or [None], ids=lambda p: getattr(p, "name", "none"))
def test_shipped_expectation_files_parse_and_name_registered_laws(path):
    entries = ex.load("unused", path)
    assert entries, f"{path} is empty: delete it instead"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not ex.unmatched(entries, LAWS), "stale entries"


def test_a_user_file_is_read_with_its_own_name_in_messages(tmp_path):
    mine = tmp_path / "mine.txt"
    mine.write_text("RMSNorm.rmsnorm_matches_golden[fp32]  xfail  ours, on purpose\n")
    [entry] = ex.read(mine)
    assert entry.where == f"{mine}:1"
    with pytest.raises(ex.ExpectationError, match="does not exist"):
        ex.read(tmp_path / "absent.txt")
    with pytest.raises(ex.ExpectationError, match="is a directory"):
        ex.read(tmp_path)


def test_user_entries_come_before_the_shipped_file_and_decide_first(tmp_path, monkeypatch):
    monkeypatch.setattr(ex, "DIRECTORY", tmp_path)
    (tmp_path / "hf-llama.txt").write_text("RMSNorm.*[fp64]  xfail  shipped\n")
    mine = tmp_path / "mine.txt"
    mine.write_text("RMSNorm.rmsnorm_matches_golden[fp64]  skip  not on our hardware\n")
    entries = ex.combined("hf-llama", [mine])
    assert entries[0].source == str(mine) and entries[1].source.endswith("hf-llama.txt")
    [out] = ex.apply([result("RMSNorm.rmsnorm_matches_golden")], "hf-llama", entries, warn=False)
    assert out.status == "skipped" and "not on our hardware" in out.message  # the user's line won
    assert ex.combined("hf-llama", [mine], shipped=False) == entries[:1]


# ---------------------------------------------------------------------------------------------- pytest node ids

NODES = """
::test_law[RMSNorm.rmsnorm_matches_golden-fp32-cpu]                        xfail  as pytest printed it (--pyargs)
tests/test_mine.py::test_norm[bf16-*]                                      skip   a user's own test, by node id
properties.conformance.test_modules::TestRMSNorm::test_rmsnorm_does_not_center[cpu-fp16]  xfail  by module name
"""


def test_a_node_id_line_covers_that_test_and_a_conformance_id_also_its_law_run():
    law, mine, course = ex.parse(NODES, source="n.txt")
    assert (law.law, law.dtype, law.device) == ("RMSNorm.rmsnorm_matches_golden", "fp32", "cpu")
    assert law.matches("RMSNorm.rmsnorm_matches_golden", "fp32", "cpu")  # check honours it: the same law run
    assert not law.matches("RMSNorm.rmsnorm_matches_golden", "bf16", "cpu")
    assert mine.law is None and course.law is None  # they name tests, not law runs
    assert not mine.matches("RMSNorm.rmsnorm_matches_golden", "bf16", "cpu")  # outside pytest: nothing
    assert mine.matches("X", "bf16", "cpu", ["tests/test_mine.py::test_norm[bf16-cpu]"])
    assert mine.matches("X", "bf16", "cpu", ["/home/u/repo/tests/test_mine.py::test_norm[bf16-cuda]"])  # a tail
    assert not mine.matches("X", "bf16", "cpu", ["other/test_mine.py::test_norm[bf16-cpu]"])
    assert not mine.matches("X", "bf16", "cpu", ["tests/test_mine.py::test_normal[bf16-cpu]"])  # brackets literal
    node = "properties.conformance.test_modules::TestRMSNorm::test_rmsnorm_does_not_center[cpu-fp16]"
    assert course.matches("X", "fp16", "cpu", ["../x/test_modules.py::TestRMSNorm::t", node])
    assert ex.unmatched([law, mine, course]) == []  # a law that exists; node ids naming no law run: not judged


def test_the_conformance_ids_are_the_ones_the_expectations_read():
    from properties.conformance.test_laws import _params

    ids = {p.id for p in _params()}
    assert ex.param_id("RMSNorm.rmsnorm_matches_golden", "fp32", "cpu") in ids
    [entry] = ex.parse("::test_law[SwiGLU.swiglu_matches_golden-bf16-cuda]  xfail  why")
    assert (entry.law, entry.dtype, entry.device) == ("SwiGLU.swiglu_matches_golden", "bf16", "cuda")
