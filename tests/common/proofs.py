"""The meta-check of a proof of power: a wrong implementation is caught only when the designated law's own
assertion failed (cause "law") — a crash, a contract failure or a timeout of the wrong implementation is not a
catch. Used by the kill matrix (every catalogue entry) and the course tests' proof; the kill matrix shows that the
check fails on a wrong implementation that merely crashes."""

from __future__ import annotations

from properties.commands.results import Demo

__all__ = ["assert_caught"]


def assert_caught(demo: Demo) -> None:
    """The designated law's own assertion failed on the entry, after a recorded number of examples, with a
    reproduction line."""
    __tracebackhide__ = True
    p, r = demo.pitfall, demo.result
    assert demo.caught, (
        f"{demo.name} ({p.module}) must fail {p.law} in {p.dtype} under the ci profile with cause 'law'; "
        f"the law returned {demo.outcome} after {r.examples} example(s): {r.message}"
    )
    assert r.found_after is not None and r.found_after >= 1
    assert "reproduce:" in r.message
