"""``nanolm-verify compare``: aggregation of law results into cells, highlights, Markdown / HTML, the CLI."""

from __future__ import annotations

import json
import re

import pytest

from properties.commands import compare, results
from properties.commands.render import html, markdown, text
from properties.commands.render import json as json_render
from properties.entry import cli
from properties.running import session
from properties.running.loading import load
from properties.running.runner import LawResult
from properties.running.session import Run, RunOptions, Selection, Subject, SubjectInfo

pytest.importorskip("transformers")
pytestmark = pytest.mark.hf


def fake_run(results: dict[str, list[LawResult]], dtypes=("bf16",)) -> Run:
    """A session's run with canned results, {spec: its LawResults} (what the workers would have sent back)."""
    subjects = [Subject(SubjectInfo.of(load(spec)), rs) for spec, rs in results.items()]
    return Run(Selection(profile="ci", dtypes=tuple(dtypes)), subjects, planned=sum(len(rs) for rs in results.values()))


def canned(ulp: float, dtypes=("bf16",)) -> list[LawResult]:
    """One golden law (its max ULP error ``ulp``) and one law without a bound, per dtype."""
    out = []
    for dtype in dtypes:
        worst = {"D": 4096, "regime": "unit scale", "x": list(range(100))}
        out.append(
            LawResult(
                "RMSNorm.rmsnorm_matches_golden",
                "RMSNorm",
                dtype,
                "cpu",
                "passed" if ulp < 4 else "failed",
                message="max ULP error too big",
                max_ulp=ulp,
                p99_ulp=ulp / 2,
                headroom=ulp / 2,
                worst_input=worst,
                examples=8,
            )
        )
        out.append(LawResult("RMSNorm.rmsnorm_does_not_center", "RMSNorm", dtype, "cpu", "passed"))
    return out


@pytest.fixture
def report():
    return results.compare(fake_run({"torch": canned(0.5), "hf-llama": canned(1.25)}))


def test_cells_aggregate_counts_errors_and_the_worst_input(report):
    torch_cell, hf_cell = report["cells"]
    assert (torch_cell.impl, torch_cell.component, torch_cell.dtype, torch_cell.device) == (
        "torch",
        "RMSNorm",
        "bf16",
        "cpu",
    )
    assert torch_cell.laws_text == "2/2"
    assert (torch_cell.max_ulp, torch_cell.p99_ulp, torch_cell.accuracy) == (0.5, 0.25, "correctly rounded")
    assert hf_cell.max_ulp == 1.25 and hf_cell.accuracy not in ("correctly rounded", "faithful")
    assert hf_cell.worst_law == "RMSNorm.rmsnorm_matches_golden" and hf_cell.worst_input["D"] == 4096


def test_the_batch_column_reads_the_batch_invariance_laws_and_no_probe(report):
    assert all(cell.batch_invariant is None and cell.batch_text == "—" for cell in report["cells"])  # none ran
    assert not hasattr(compare, "batch_invariance") and not hasattr(results, "batch_invariance")  # no probe

    def batch(status, **kw):
        return LawResult("RMSNorm.rmsnorm_is_batch_invariant", "RMSNorm", "fp32", "cpu", status, **kw)

    cells = {
        status: results.build_cells("x", [r.to_json() for r in [batch(status)]])[0]
        for status in ("passed", "failed", "xfailed", "xpassed", "skipped")
    }
    assert [cells[s].batch_text for s in ("passed", "failed", "xfailed", "xpassed", "skipped")] == [
        "yes", "no", "no", "yes", "—",
    ]  # fmt: skip
    assert cells["failed"].batch_source == "RMSNorm.rmsnorm_is_batch_invariant"
    measured = batch("passed", measurements={"batch_invariant": False})  # declared batch-variant: measured, not judged
    assert results.build_cells("x", [measured.to_json()])[0].batch_text == "no"


def test_highlights_name_the_differing_accuracy_classes_with_numbers(report):
    [line] = results.highlights(report["cells"])
    # a class "≤ k ULP" states its max rounded up (k), in the one ULP format; a named class gets its number
    assert line == "RMSNorm bf16 cpu — correctly rounded: torch (max 0.5 ULP); ≤ 1.3 ULP: hf-llama"


def test_markdown_and_html_put_implementations_in_columns_with_headroom_cells(report, tmp_path):
    md, page, written = compare.write(report, tmp_path)
    text = md.read_text()
    assert "| law | dtype | torch | hf-llama |" in text
    assert "| rmsnorm_matches_golden | bf16 | 0.25 | 0.62 |" in text  # headroom per cell, one format
    assert "| dtype | torch | hf-llama |" in text and "laws 2/2<br>headroom vs golden 0.25<br>max 0.5 ULP" in text
    assert text.count("- **hf-llama**") == 1 and text.count("roundings 2") == 1  # conventions: once per impl
    body = page.read_text()
    assert body.startswith("<!doctype html>") and "<script" not in body
    assert '<td class="c p0" title="passed; headroom 0.25; max 0.5 ULP">0.25</td>' in body
    assert '<td class="c p1"' in body and "<th>hf-llama</th>" in body
    data = json.loads(written.read_text())
    assert data["schema"] == "nanolm-verify/compare-report/3" and len(data["results"]["torch"]) == 2


def test_failures_are_red_and_listed_with_their_messages(tmp_path):
    report = results.compare(fake_run({"torch": canned(7.0, ["fp16"])}, ["fp16"]))
    text = markdown.compare(report)
    assert "| rmsnorm_matches_golden | fp16 | **FAIL 3.5** |" in text
    assert "**failed**" in text and "max ULP error too big" in text
    assert '<td class="c f" title="failed; headroom 3.5; max 7 ULP' in html.compare(report)
    assert results.exit_status_of(report) == 1


def test_a_law_not_defined_for_a_dtype_is_shown_as_such_not_red():
    law = "RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded"  # defined for bf16 only
    records = [
        LawResult(law, "RMSNorm", "bf16", "cpu", "passed", headroom=0.5),
        LawResult("RMSNorm.rmsnorm_preserves_sign", "RMSNorm", "fp32", "cpu", "passed"),
    ]
    report = results.compare(fake_run({"torch": records}, ["fp32", "bf16"]))
    rows = {(law, dtype): v for law, dtype, _, [v] in results.matrix(report, "RMSNorm")}
    assert rows[("RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded", "fp32")].css == "na"
    assert rows[("RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded", "bf16")].text == "0.50"
    assert rows[("RMSNorm.rmsnorm_preserves_sign", "bf16")].text == "—"  # defined, but not run
    assert rows[("RMSNorm.rmsnorm_preserves_sign", "fp32")].text == "ok"  # an exact law: no bound
    assert results.exit_status_of(report) == 0
    assert '<td class="c na" title="the law is not defined for fp32">n/a</td>' in html.compare(report)


def test_expectations_turn_a_documented_failure_into_xfailed(monkeypatch, tmp_path):
    """The session applies an implementation's shipped expectation file (the verifier reads it, the worker runs)."""
    from properties.running import expectations

    monkeypatch.setattr(expectations, "DIRECTORY", tmp_path)
    wrong = "properties.gallery.eps_outside_sqrt"
    (tmp_path / f"{wrong}.txt").write_text("RMSNorm.rmsnorm_matches_golden[fp32]  xfail  documented\n")
    selection = Selection(profile="ci", only=("RMSNorm.rmsnorm_matches_golden",), dtypes=("fp32",))
    report = results.compare(session.run([wrong, "torch"], selection, RunOptions.of("ci", workers=1)))
    assert [c.laws_text for c in report["cells"]] == ["0/1 (1 xfailed)", "1/1"]
    assert results.exit_status_of(report) == 0


def test_cli_has_compare_and_unknown_implementations_exit_2(tmp_path, capsys):
    assert cli.main(["compare", "no_such_module_xyz", "--out", str(tmp_path)]) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err
    assert cli.main(["compare", "torch"]) == 2  # --out (or --league) is required, before any work
    assert "--out DIR" in capsys.readouterr().err
    assert cli.main(["compare", "--out", str(tmp_path)]) == 2  # no implementation named
    assert "name the implementations" in capsys.readouterr().err


def test_end_to_end_hf_llama_rounds_twice_where_torch_rounds_once():
    """The report's headline, measured by the real laws: in bf16 torch's RMSNorm is correctly rounded, HF-Llama's
    (x·r rounded, then ·w rounded again) is not."""
    selection = Selection(profile="ci", only=("RMSNorm.rmsnorm_matches_golden",), dtypes=("bf16",))
    report = results.compare(session.run(["torch", "hf-llama"], selection, RunOptions.of("ci", workers=1)))
    torch_cell, hf_cell = report["cells"]
    assert (torch_cell.laws_text, hf_cell.laws_text) == ("1/1", "1/1")  # both conventions pass
    assert torch_cell.max_ulp <= 0.5 + 1e-9  # one rounding of an fp32 result: at most a hair above ½ ULP
    assert 0.75 < hf_cell.max_ulp < 2  # two roundings: visibly worse, still within the derived bound
    assert hf_cell.max_ulp > torch_cell.max_ulp + 0.25  # the second rounding shows


def test_ulp_numbers_have_one_format_rounded_up_never_into_a_better_class():
    """Two significant digits rounded up (a max: the text is an upper bound), so 0.5000000000000042 never reads as
    correctly rounded, and a faithful value never reads 1; the "≤ k ULP" class says the same k."""
    assert results.ulp_text(0.5000000000000042) == "0.51"
    assert results.ulp_text(0.49998158626697325) == "0.5"
    assert results.ulp_text(0.99999999) == "0.99999999" and results.ulp_text(0.9996) == "0.9996"
    assert [results.ulp_text(v) for v in (1.25, 3.507, 2591.4, 2.1347e8)] == ["1.3", "3.6", "2600", "2.2e8"]
    assert [results.ulp_text(v) for v in (None, float("nan"), float("inf"), 0.0)] == ["—", "—", "inf", "0"]
    for value in (1.25, 3.507, 2591.4, 1.0965e8):
        assert results.accuracy_class(value) == f"≤ {results.ulp_text(value)} ULP"
        assert float(results.ulp_text(value)) >= value


def _law(law_id: str, dtype: str, headroom: float, status: str = "passed", **kw) -> LawResult:
    return LawResult(law_id, law_id.split(".")[0], dtype, "cpu", status, headroom=headroom, max_ulp=1.0, **kw)


def test_compare_prints_one_verdict_per_implementation_first_coloured_as_the_html(tmp_path, capsys, monkeypatch):
    near = [_law("RMSNorm.rmsnorm_matches_golden", "bf16", 0.95)]
    tight = [  # 0.9999 on a law whose bound a correct result attains: not amber; 0.3 elsewhere
        _law("RMSNorm.rmsnorm_is_scale_invariant", "bf16", 0.9999),
        _law("RMSNorm.rmsnorm_matches_golden", "bf16", 0.3),
    ]
    failed = [_law("RMSNorm.rmsnorm_matches_golden", "bf16", 3.1e7, "failed", cause="law")]
    report = results.compare(fake_run({"torch": near, "nanolm_core": tight, "hf-llama": failed}))
    cells = {v.spec: v for v in results.impl_verdicts(report)}
    html_css = {spec: {v.css for *_, row in results.matrix(report, "RMSNorm") for v in row} for spec in cells}
    assert [cells[s].word for s in ("torch", "nanolm_core", "hf-llama")] == ["PASS", "PASS", "FAIL"]
    assert (cells["torch"].css, cells["nanolm_core"].css, cells["hf-llama"].css) == ("p2", "p0", "f")
    assert {"p2", "pb", "f"} <= set().union(*html_css.values())  # the same classes the HTML cells carry
    page = html.compare(report)
    assert 'class="c pb"' in page and 'class="c p2"' in page and '<span class="pb">' in page  # and its legend
    lines = text.compare_verdicts(report, colours=True)
    heads = [line for line in lines if not line.startswith(" ")]  # one verdict each (continuations indented)
    assert heads[0].startswith("\x1b[33mPASS\x1b[0m torch: 1/1 laws passed; max headroom 0.95")  # amber, as p2
    assert heads[1].startswith("\x1b[32mPASS\x1b[0m nanolm_core: 2/2 laws passed; max headroom 0.30*")
    assert heads[2].startswith("\x1b[1;31mFAIL\x1b[0m hf-llama: 0/1 laws passed, 1 failed; worst:")
    assert "failed by 3e7" in " ".join(lines) and heads[3].startswith("* laws whose bound") and len(heads) == 4
    assert all(len(re.sub("\x1b\\[[0-9;]*m", "", line)) <= 80 for line in lines)
    plain = text.compare_verdicts(report)
    assert not any("\x1b" in line for line in plain)

    monkeypatch.setattr(session, "run", lambda *a, **k: fake_run({"torch": near, "hf-llama": failed}))
    assert cli.main(["compare", "torch", "hf-llama", "--out", str(tmp_path), "-q"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("PASS torch:") and out[1].startswith("FAIL hf-llama:")  # first, no colour off a tty


def test_the_league_ranks_every_implementation_and_lists_its_findings(tmp_path):
    report = results.compare(fake_run({"torch": canned(0.5), "hf-llama": canned(9.0)}))
    report["unavailable"] = {"timm": "No module named 'timm'"}
    text = markdown.league(report, "nanolm-verify compare --league L")
    rows = [line for line in text.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert rows[0].startswith("| 1 | **torch** |") and rows[1].startswith("| 2 | **hf-llama** |")
    assert "| **1** |" in rows[1] and "4.5" in rows[1]  # one unexpected failure, its headroom 9/2
    assert "- Declares (RMSNorm): compute fp64→fp32; roundings 2" in text  # its findings are declared conventions
    assert "**timm**: No module named 'timm'" in text and "Regenerate: `nanolm-verify compare --league L`" in text


def test_a_report_renders_the_same_from_its_results_json(report, tmp_path):
    _, _, written = compare.write(report, tmp_path)
    again = json_render.compare_from_json(json.loads(written.read_text()))
    assert markdown.compare(again) == markdown.compare(report)
    assert html.compare(again) == html.compare(report)


def test_the_league_lists_failures_expected_by_a_declaration_and_unexpected_ones_with_their_cause():
    why = "declared compute fp64→fp32: fp64 finite-difference gradcheck needs fp64 arithmetic\nmismatch"
    records = [
        LawResult("RMSNorm.rmsnorm_gradients_pass_gradcheck", "RMSNorm", "fp64", "cpu", "xfailed", why),
        LawResult("RMSNorm.rmsnorm_preserves_sign", "RMSNorm", "fp32", "cpu", "failed", "boom", cause="crash"),
    ]
    text = markdown.league(results.compare(fake_run({"torch": records}, ["fp64", "fp32"])), "cmd")
    assert "- Expected failure: declared compute fp64→fp32: fp64 finite-difference gradcheck" in text
    assert "- **Unexpected failures**: `RMSNorm.rmsnorm_preserves_sign` (crash) fp32" in text
    assert "None: every law passes" not in text


def test_the_reproduce_line_names_the_whole_selection():
    selection = Selection(profile="ci", devices=("cpu",), dtypes=("fp32", "bf16"), only=("RMSNorm",), seed=3)
    report = results.compare(Run(selection, [], planned=0, unavailable={"torch": "gone"}))
    assert report["meta"]["command"] == (
        "nanolm-verify compare torch --profile ci --device cpu --only RMSNorm --dtype fp32,bf16 --seed 3"
    )


def test_every_cell_class_has_one_meaning_in_the_html_and_the_terminal():
    """The terminal colours the HTML's classes: each class a verdict can carry has a CSS rule in the template and a
    terminal colour, and the template's legend names the classes a passing cell can take."""
    from importlib import resources

    page = resources.files("properties.commands.render").joinpath("templates", "compare.html").read_text("utf-8")
    css_rules = set(re.findall(r"\.([a-z][a-z0-9]*)[,{]", page.split("</style>")[0]))
    classes = {m.css for m in results.MARKS.values()} | {"p0", "p1", "p2", "pb", "na", "none"}
    assert classes - {"none"} <= css_rules and classes <= set(text.ANSI)
    legend = page.split('class="legend"')[1].split("</p>")[0]
    assert all(f'class="{c}"' in legend for c in ("p0", "p1", "p2", "pb", "ok", "f", "xf", "sk", "na"))
