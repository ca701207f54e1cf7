"""Generic law families: a law written once and applied to every component record (``components.RECORDS``).

A family is a function ``define(record) -> law ids`` that registers the family's law(s) for one component through
``table.law`` — reading only the record: its cases, build, call, golden values and bounds, never the component's
name. ``@family(name, axis=…)`` registers the definer and applies it to every record there is; a record that
a family cannot apply to says why in ``record.not_applicable[name]`` and gets no law (the matrix shows the reason).
A component registered later (``components.register``: a test's throwaway one) gets every family by :func:`apply`.

    @family("layout", axis="memory layout of every input and parameter")
    def _layout(record: components.Component) -> tuple[str, ...]:
        @law(record.name, cost=4)
        @given(data=st.data())
        def law_fn(impl, dtype, device, data): ...
        named(law_fn, f"{record.snake}_ignores_memory_layout", "the law's statement")
        return (f"{record.name}.{law_fn.__name__}",)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from properties.library import components

__all__ = ["FAMILIES", "Family", "apply", "family", "forget", "named"]


@dataclasses.dataclass(frozen=True)
class Family:
    """A generic law family: its name (the key of ``record.not_applicable``), the axis it walks (a phrase for the
    matrix), and its definer."""

    name: str
    axis: str
    define: Callable[[components.Component], tuple[str, ...]]
    laws: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # component -> its law ids
    # why the family cannot apply to a record, derived from the record itself (None: it applies) — for a rule that
    # holds for every component alike ("a linear layer's input must be in its weight's dtype"); a reason particular
    # to one component stays in its record's ``not_applicable``
    reason: Callable[[components.Component], str | None] | None = None

    def not_applicable(self, rec: components.Component) -> str | None:
        """Why this family does not apply to ``rec`` (its record's word first), or None."""
        return rec.not_applicable.get(self.name) or (self.reason(rec) if self.reason is not None else None)


FAMILIES: dict[str, Family] = {}


def family(
    name: str, *, axis: str, reason: Callable[[components.Component], str | None] | None = None
) -> Callable[[Callable[..., tuple[str, ...]]], Family]:
    """Register the definer of family ``name`` and apply it to every record (but those that give a reason — in
    ``record.not_applicable``, or derived by ``reason(record)``)."""

    def register(define: Callable[[components.Component], tuple[str, ...]]) -> Family:
        if name in FAMILIES:
            raise ValueError(f"law family {name!r} is defined twice")
        f = FAMILIES[name] = Family(name, axis, define, reason=reason)
        for rec in components.RECORDS.values():
            _define(f, rec)
        return f

    return register


def _define(f: Family, rec: components.Component) -> tuple[str, ...]:
    if f.not_applicable(rec) is not None or rec.name in f.laws:
        return f.laws.get(rec.name, ())
    ids = tuple(f.define(rec))
    f.laws[rec.name] = ids
    return ids


def apply(rec: components.Component) -> dict[str, tuple[str, ...]]:
    """Every family applied to ``rec`` (a record registered after the laws were imported) → {family: law ids};
    a family the record declines (``not_applicable``) maps to ()."""
    return {name: _define(f, rec) for name, f in FAMILIES.items()}


def named(fn: Any, name: str, doc: str) -> Any:
    """Give a law function made in a loop its law name and its statement (the law table reads both)."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def forget(component: str) -> None:
    """Remove the laws every family defined for ``component`` (a test's throwaway, after it is unregistered)."""
    from properties.library.table import LAWS

    for f in FAMILIES.values():
        for law_id in f.laws.pop(component, ()):
            LAWS.pop(law_id, None)
