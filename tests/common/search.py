"""``reach``: some draw of a strategy satisfies a condition — Hypothesis' ``find_any`` (as in HypothesisWorks/
hypothesis ``tests/common/debug.py``), for the meta-tests of the strategies. Budgeted in examples (derandomized:
the same draws on every machine), never in seconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.strategies import SearchStrategy

__all__ = ["FIND", "reach"]

T = TypeVar("T")

FIND = settings(
    max_examples=2000, database=None, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)


class _Found(Exception):
    pass


def reach(strategy: SearchStrategy[T], condition: Callable[[T], Any], max_examples: int = 2000) -> T:
    """Some draw of ``strategy`` satisfies ``condition`` (find_any: the first hit, not shrunk); AssertionError if
    none of ``max_examples`` derandomized draws does."""
    hits = []

    @settings(FIND, max_examples=max_examples, phases=[Phase.generate], report_multiple_bugs=False)
    @given(strategy)
    def search(value: T) -> None:
        if condition(value):
            hits.append(value)
            raise _Found

    try:
        search()
    except _Found:
        return hits[0]
    raise AssertionError(f"no example in {max_examples} draws satisfies the condition")
