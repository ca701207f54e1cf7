"""The component × axis matrix, generated from the records and the law table: which laws cover each axis of each
component, and for every empty cell the written reason (``record.not_applicable[axis]``, or the one a family derives
from the record: ``families.Family.reason``). Never maintained by hand:
``nanolm-verify check --list --matrix`` prints it, ``docs/matrix.md`` is written by
``nanolm-verify check --list --matrix --markdown docs/matrix.md`` and a test keeps it up to date.

The axes, in order:

* every generic law family (``families.FAMILIES``: one law per record, written once);
* every law module that is not one component's own (``laws/paths.py``, ``stored.py`` …): its ``AXIS``;
* "own": the component's own laws (``laws/<component>.py``: values, gradients, invariants);
* "protocols": the laws run under call protocols (grad modes, held and aliased outputs, retained graphs …);
* "diagnosis" (a failure's counterexample re-evaluated: ``library.diagnosis``) and "drop-in"
  (``properties.testing``), which read the record.
"""

from __future__ import annotations

import dataclasses
import sys

from properties.library import components, families
from properties.library.laws import LAWS

__all__ = ["Axis", "Cell", "axes", "cells", "markdown", "text", "unexplained"]


@dataclasses.dataclass(frozen=True)
class Axis:
    key: str  # the key of ``record.not_applicable`` that explains an empty cell
    title: str


@dataclasses.dataclass(frozen=True)
class Cell:
    laws: tuple[str, ...]  # law ids (or, for diagnosis / drop-in, what covers it)
    reason: str | None = None  # why the cell is empty (the record's written reason); None with laws

    @property
    def explained(self) -> bool:
        return bool(self.laws) or bool(self.reason)


OWN = Axis("own", "values, gradients, invariants (the component's own laws)")
PROTOCOLS = Axis("protocols", "call protocols: grad modes, inference mode, held outputs, retained graphs …")
DIAGNOSIS = Axis("diagnosis", "diagnosis of a failure (library.diagnosis)")
DROP_IN = Axis("drop-in", "drop-in assertions (properties.testing)")


def _module(law_id: str) -> str:
    return LAWS[law_id].func.__module__.rsplit(".", 1)[-1]


def _family_modules() -> set[str]:
    return {_module(i) for f in families.FAMILIES.values() for ids in f.laws.values() for i in ids}


def axes() -> list[Axis]:
    """Every axis of the matrix, in order."""
    own = {r.snake for r in components.RECORDS.values()}
    out = [Axis(f.name, f.axis) for f in families.FAMILIES.values()]
    skip = own | _family_modules()
    modules = sorted({_module(i) for i in LAWS if LAWS[i].component in components.RECORDS} - skip)
    for name in modules:
        title = getattr(sys.modules[LAWS[next(i for i in LAWS if _module(i) == name)].func.__module__], "AXIS", name)
        out.append(Axis(name, title))
    return [*out, OWN, PROTOCOLS, DIAGNOSIS, DROP_IN]


def _laws_of(rec: components.Component, axis: Axis) -> tuple[str, ...]:
    mine = [i for i, law in LAWS.items() if law.component == rec.name]
    if axis.key in families.FAMILIES:
        return tuple(families.FAMILIES[axis.key].laws.get(rec.name, ()))
    if axis is OWN:
        return tuple(i for i in mine if _module(i) == rec.snake)
    if axis is PROTOCOLS:
        return tuple(i for i in mine if hasattr(LAWS[i].body, "protocols"))
    if axis is DIAGNOSIS:
        return ("library.diagnosis",) if axis.key not in rec.not_applicable else ()
    if axis is DROP_IN:
        if axis.key in rec.not_applicable or rec.from_terms is None:
            return ()
        return (rec.dropin("close"),) + ((rec.dropin("grads_close"),) if rec.vjp_of is not None else ())
    return tuple(i for i in mine if _module(i) == axis.key)


def cells() -> dict[str, dict[str, Cell]]:
    """{component: {axis key: Cell}} for every record and axis."""
    out: dict[str, dict[str, Cell]] = {}
    for rec in components.RECORDS.values():
        row = {}
        for axis in axes():
            laws = _laws_of(rec, axis)
            row[axis.key] = Cell(laws, None if laws else _reason(rec, axis))
        out[rec.name] = row
    return out


def _reason(rec: components.Component, axis: Axis) -> str | None:
    """Why ``rec`` has no law on ``axis``: its record's word, or (a family) the reason the family derives from it."""
    f = families.FAMILIES.get(axis.key)
    return f.not_applicable(rec) if f is not None else rec.not_applicable.get(axis.key)


def unexplained() -> list[tuple[str, str]]:
    """(component, axis) of every empty cell without a written reason: the matrix must have none."""
    return [(c, a) for c, row in cells().items() for a, cell in row.items() if not cell.explained]


def _short(law_id: str) -> str:
    return law_id.split(".", 1)[1] if "." in law_id else law_id


def text() -> str:
    """The matrix for the terminal: one block per axis, a line per component."""
    grid, lines = cells(), []
    for axis in axes():
        lines.append(f"{axis.key}: {axis.title}")
        for name, row in grid.items():
            cell = row[axis.key]
            shown = ", ".join(_short(i) for i in cell.laws) if cell.laws else f"— {cell.reason or 'NO REASON GIVEN'}"
            lines.append(f"  {name:<11} {shown}")
    holes = unexplained()
    lines.append(f"{len(grid)} components × {len(axes())} axes; {len(holes)} empty cells without a reason")
    return "\n".join(lines)


def markdown() -> str:
    """The matrix as docs/matrix.md: a table of law counts, then every cell's laws or reason."""
    grid, ax = cells(), axes()
    names = list(grid)
    out = [
        "# Component × axis matrix",
        "",
        "Generated from the component records and the law table by "
        "`nanolm-verify check --list --matrix --markdown docs/matrix.md` (`properties.library.matrix`); a test keeps "
        "it up to date. A number is the laws covering the cell; — is an empty cell, whose reason (written in the "
        "component's record, `not_applicable`) is listed below the table.",
        "",
        "| axis | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for axis in ax:
        row = [str(len(grid[n][axis.key].laws)) if grid[n][axis.key].laws else "—" for n in names]
        out.append(f"| {axis.key} | " + " | ".join(row) + " |")
    out.append("")
    for axis in ax:
        out += [f"## {axis.key}", "", axis.title, ""]
        for name in names:
            cell = grid[name][axis.key]
            shown = ", ".join(f"`{_short(i)}`" for i in cell.laws) if cell.laws else f"— {cell.reason or 'NO REASON'}"
            out.append(f"- **{name}**: {shown}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
