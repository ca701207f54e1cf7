"""The check table, its legend, the progress line: 80 columns, headroom per cell, one line per law off a TTY."""

from __future__ import annotations

import io

import pytest

from golden.formats import NAMES
from properties.commands import results
from properties.commands.render import text as report
from properties.running.loading import load
from properties.running.runner import LAWS, LawResult, run_law


def _r(law_id="RMSNorm.rmsnorm_matches_golden", dtype="fp32", device="cpu", status="passed", **kw) -> LawResult:
    return LawResult(law_id, law_id.split(".")[0], dtype, device, status, **kw)


@pytest.mark.parametrize(
    ("h", "failed", "text"),
    [(0.3149, False, "0.31"), (0.99999, False, "0.99"), (1.0, False, "1.00"), (2.47, True, "2.5"),
     (1.0001, True, "1.1"), (123.4, True, "123"), (2.4e5, True, "2e5"), (float("inf"), True, "inf"), (None, False, "")],
)  # fmt: skip
def test_headroom_text_is_at_most_four_characters_and_never_rounds_up(h, failed, text):
    assert results.headroom_text(h, failed) == text


def test_cells_show_status_and_headroom_or_the_cause_in_eight_columns():
    assert report.cell_text(_r(headroom=0.3149)) == "ok 0.31"
    assert report.cell_text(_r(status="failed", cause="law", headroom=2.47)) == "FAIL 2.5"
    assert report.cell_text(_r(status="failed", cause="crash")) == "CRASH"
    assert report.cell_text(_r(status="failed", cause="contract")) == "CONTRACT"
    assert report.cell_text(_r()) == "ok" and report.cell_text(None) == "·"
    assert report.cell_text(_r(status="xfailed", headroom=3.0)) == "xfail"


def test_the_table_fits_80_columns_with_every_law_and_two_devices():
    results = [
        _r(law.id, dtype, device, "failed" if i % 3 == 0 else "passed", cause="law", headroom=1.5e5 if i % 3 else 7.77)
        for i, law in enumerate(LAWS.values())
        for dtype in NAMES
        for device in ("cpu", "cuda:0")
    ]
    text = report.format_table(results)
    assert max(map(len, text.splitlines())) <= 80
    assert "law (on cuda:0)" in text and "FAIL 7.8" in text and "ok 1e5" not in text
    longest = max((law.name for law in LAWS.values()), key=len)
    assert longest in text  # the longest law name is not cut at 80 columns


def test_the_legend_fits_80_columns_and_explains_headroom_cancellation_underflow():
    lines = report.LEGEND.splitlines()
    assert max(map(len, lines)) <= 80
    for word in ("headroom", "cancellation", "underflow"):
        assert any(line.startswith(word) for line in lines)


def test_a_golden_law_result_carries_its_headroom_and_bound():
    r = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], load("nanolm_core"), dtype="bf16", profile="ci")
    assert r.status == "passed" and 0 < r.headroom <= 1
    assert r.bound["ulps"] > 0 and r.bound["abs"] > 0 and "u_c" in r.bound["formula"]
    assert r.headroom == r.measurements["headroom"]  # the assertion layer's own maximum
    record = r.to_json()
    assert record["headroom"] == r.headroom and record["bound"] == r.bound


def test_a_failed_law_has_headroom_above_one():
    r = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], load("properties.gallery.eps_outside_sqrt"), dtype="fp32")
    assert (r.status, r.cause) == ("failed", "law") and r.headroom > 1


def test_progress_off_a_terminal_is_one_plain_line_per_finished_law():
    out = io.StringIO()
    progress = report.Progress(2, stream=out)
    progress(_r(headroom=0.5, duration=1.25))
    progress(_r(dtype="bf16", status="failed", cause="crash"))
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines == [
        "[1/2 laws] RMSNorm.rmsnorm_matches_golden fp32 cpu: ok 0.50 (1.2 s)",
        "[2/2 laws] RMSNorm.rmsnorm_matches_golden bf16 cpu: CRASH (0.0 s)",
    ]
    assert "\r" not in out.getvalue()


def test_progress_on_a_terminal_is_one_carriage_return_line_with_an_estimate():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    progress = report.Progress(4, stream=out)
    progress(_r())
    text = out.getvalue()
    assert text.startswith("\r  1/4 laws (") and "s left" in text and "\n" not in text
    assert max(len(part) for part in text.split("\r")) <= 79
    progress.close()
    assert out.getvalue().endswith("\r")


def test_progress_total_shrinks_when_planned_runs_will_not_run():
    out = io.StringIO()
    progress = report.Progress(4, stream=out)
    progress.skip(2)
    progress(_r())
    assert out.getvalue().startswith("[1/2 laws]")


def test_an_empty_table_still_has_its_header():
    assert report.format_table([]).splitlines() == [
        "law        fp64     fp32     fp16     bf16",
        "  (no law finished)",
    ]
