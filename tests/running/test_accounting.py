"""Every planned law run is accounted for: a run reports passed + failed + skipped-with-reason + errors = planned,
or an error result names each run that came back without a result; a run in which nothing was judged is said so
in one line (the commands exit 1 on it unless --allow-nothing-judged: tests/commands/test_bad_command_lines.py)."""

from __future__ import annotations

import pytest

from properties.running import session
from properties.running.runner import LawResult
from properties.running.session import Run, RunOptions, Selection, SubjectInfo


class _Pool:
    """A pool whose run returns no result for its second task (as when a busy worker was dropped)."""

    def __init__(self, spec: str, **options: object) -> None:
        self.info, self.interrupted = SubjectInfo.unknown(spec), None

    def run(self, tasks, on_result=None):
        out = [LawResult(t.law_id, t.component, t.dtype, t.device, "passed") for t in tasks]
        out[1] = None
        for r in out:
            if r is not None and on_result:
                on_result(r)
        return out

    def close(self) -> None:
        pass


def test_a_law_run_without_a_result_is_an_error_result_naming_it(monkeypatch):
    monkeypatch.setattr(session, "Pool", _Pool)
    selection = Selection(profile="ci", only=("RMSNorm",), dtypes=("fp32",))
    tasks = selection.tasks()
    seen = []
    with session.Session(RunOptions(workers=1, timeout=60.0)) as s:
        results = s.results("nanolm_core", tasks, on_result=seen.append)
    assert len(results) == len(tasks) == len(seen)  # the progress line counts it too
    lost = [r for r in results if r.status != "passed"]
    assert [(r.law_id, r.status) for r in lost] == [(tasks[1].law_id, "error")]
    assert "no result came back" in lost[0].message


def _run(*statuses: str, messages: tuple[str, ...] = ()) -> Run:
    results = [
        LawResult("RMSNorm.x", "RMSNorm", "fp32", "cpu", st, messages[i] if i < len(messages) else "")
        for i, st in enumerate(statuses)
    ]
    return Run(Selection(), [session.Subject(SubjectInfo.unknown("m"), results)], planned=max(1, len(results)))


@pytest.mark.parametrize("statuses", [("passed",), ("skipped", "failed"), ("skipped", "error"), ("xfailed",)])
def test_a_run_with_one_judged_law_run_is_judged(statuses):
    assert _run(*statuses).nothing_judged() is None


def test_a_run_of_skips_only_says_why_in_one_line():
    line = _run("skipped", "skipped", "skipped", messages=("cuda is not available", "cuda is not available", "x"))
    text = line.nothing_judged()
    assert (
        text
        == "nothing was judged: all 3 law runs were skipped, 2 because cuda is not available (1 other reason(s) too)"
    )
    assert _run().nothing_judged() == "nothing was judged: none of the 1 planned law runs ran"
