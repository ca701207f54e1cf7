"""What a run found beyond its verdicts, for the footer of a report and its JSON: the diagnoses of its failures,
the properties it measured without judging them (batch invariance), and whether each numeric declaration was
needed by the measurements.

Whether a declaration was needed: every bound of a run whose component declares a numeric convention departing
in the run's dtype is also evaluated without that declaration (``bounds.shadowed``), and the run records the
headroom each comparison would have had (measurement ``headroom without``, per key). A declaration that no
measured dtype needed — every law of the component holds without it — judges the implementation more loosely
than its observed accuracy: a warning, with the tighter declaration suggested. A law that failed, or that the
declaration excused (``Conventions.excuse``), counts as needing it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from golden.formats import NAMES
from properties.library import components
from properties.library.assertions import TIER_OFF, TIERS, WITHOUT
from properties.library.conventions import NUMERIC, ConventionError, Conventions, parse_all, written
from properties.running.runner import LawResult

__all__ = [
    "Declaration",
    "batch_lines",
    "declarations",
    "diagnosis_lines",
    "left_lines",
    "subject_declarations",
    "tier_line",
]


@dataclasses.dataclass(frozen=True)
class Declaration:
    """One numeric declaration of a component, and what the run's measurements said about it."""

    component: str
    key: str
    value: Any  # as declared (``Conventions.declared``)
    departing: tuple[str, ...]  # the dtypes whose bounds it changes (``Conventions.departing``)
    needed: tuple[str, ...]  # measured dtypes that needed it (a law exceeded its bound without it, or failed)
    unneeded: tuple[str, ...]  # measured dtypes where every law held without it
    headroom: float | None  # the largest headroom without it over ``unneeded`` (≤ 1)

    @property
    def warning(self) -> bool:
        """Declared, measured, and needed nowhere: the run judged the implementation more loosely than it is."""
        return bool(self.unneeded) and not self.needed

    def text(self) -> str:
        shown = written(self.key, self.value)
        if self.warning:
            room = f" (largest headroom without it {_truncated(self.headroom)})" if self.headroom is not None else ""
            return (
                f"{self.component} {shown} was not needed: in {', '.join(self.unneeded)} every law holds without "
                f"it{room} — the run judged a looser bound than the accuracy observed; {self.suggestion()}"
            )
        spare = f"; not in {', '.join(self.unneeded)}" if self.unneeded else ""
        return f"{self.component} {shown}: needed in {', '.join(self.needed)}{spare}"

    def suggestion(self) -> str:
        """The tighter declaration: without the key where the measurements did not need it."""
        kept = [d for d in self.departing if d not in self.unneeded]
        if not kept:
            return "drop it" + (" (the reference's compute dtype is enough)" if self.key == "compute_dtype" else "")
        value = (
            {d: self.value.get(d) for d in kept} if isinstance(self.value, Mapping) else dict.fromkeys(kept, self.value)
        )
        return f"declare {written(self.key, value)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "key": self.key,
            "value": self.value,
            "needed": list(self.needed),
            "unneeded": list(self.unneeded),
            "headroom_without": self.headroom,
            "warning": self.warning,
            "text": self.text(),
        }


def _truncated(h: float) -> str:
    """A headroom ≤ 1 shown truncated (0.999 reads 0.99, never 1)."""
    return f"{math.floor(h * 100) / 100:.2f}" if h < 1 else f"{h:.3g}"


def declarations(results: Sequence[LawResult], conventions: Mapping[str, Conventions]) -> list[Declaration]:
    """For each numeric key a component declares (and the run measured), in which dtypes its measurements needed
    it. ``conventions``: the implementation's parsed declarations per component."""
    out = []
    for component, c in conventions.items():
        mine = [r for r in results if r.component == component]
        for key in NUMERIC:
            if key not in c.declared:
                continue
            needed, unneeded, room = [], [], None
            for dtype in NAMES:
                runs = [r for r in mine if r.dtype == dtype]
                if not runs or key not in c.departing(dtype):
                    continue
                verdict = _needed(runs, key)
                if verdict is None:
                    continue
                if verdict:
                    needed.append(dtype)
                else:
                    unneeded.append(dtype)
                    worst = max(float((r.measurements.get(WITHOUT) or {}).get(key, 0.0)) for r in runs)
                    room = worst if room is None else max(room, worst)
            if needed or unneeded:
                departing = tuple(d for d in NAMES if key in c.departing(d))
                out.append(
                    Declaration(component, key, c.declared[key], departing, tuple(needed), tuple(unneeded), room)
                )
    return out


def subject_declarations(results: Sequence[LawResult], info: Any) -> list[Declaration]:
    """:func:`declarations` for a subject as the session describes it (``SubjectInfo``: its raw ``conventions`` and
    ``provided`` components); none where the declaration cannot be read (such a module never ran)."""
    try:
        parsed = parse_all(info.conventions, components.names())
    except ConventionError:
        return []
    return declarations(results, {c: parsed[c] for c in info.provided if c in parsed})


def _needed(runs: Sequence[LawResult], key: str) -> bool | None:
    """True: a law of this dtype failed, was excused by the declaration, or exceeded its bound without ``key``;
    False: every law held without it; None: nothing measured it."""
    measured = False
    for r in runs:
        if r.status in ("failed", "error") or (r.status == "xfailed" and "declared" in r.measurements):
            return True
        without = (r.measurements.get(WITHOUT) or {}).get(key)
        if without is not None:
            measured = True
            if float(without) > 1.0:
                return True
    return False if measured else None


def diagnosis_lines(results: Sequence[LawResult]) -> list[str]:
    """One line per distinct diagnosis of the failures: how many runs (which dtypes) it explains, and which laws."""
    groups: dict[str, list[LawResult]] = {}
    for r in results:
        if r.status == "failed" and r.diagnosis:
            groups.setdefault(f"{r.component}: {r.diagnosis}", []).append(r)
    lines = []
    for text, runs in groups.items():
        dtypes = [d for d in NAMES if any(r.dtype == d for r in runs)]
        laws = list(dict.fromkeys(r.law_id.split(".", 1)[-1] for r in runs))
        more = f" and {len(laws) - 2} more" if len(laws) > 2 else ""
        count = f"{len(runs)} failure{'s' if len(runs) != 1 else ''}"
        lines.append(f"{count} ({', '.join(dtypes)}; {', '.join(laws[:2])}{more}) — {text}")
    return lines


def batch_lines(results: Sequence[LawResult]) -> list[str]:
    """The batch invariance each component measured without requiring it (``assertions.assert_batch_invariant``):
    one line per component whose results varied with the batch size."""
    lines = []
    for component in dict.fromkeys(r.component for r in results):
        parts = []
        for r in results:
            if (
                r.component == component
                and r.law_id.endswith("_is_batch_invariant")
                and r.status == "passed"
                and r.measurements.get("batch_invariant") is False
            ):
                v = r.measurements.get("batch variance") or {}
                ulps = float(v.get("max_ulp", 0.0))
                parts.append(
                    f"{r.dtype} {v.get('differing')} of {v.get('examples')} examples differ, up to {ulps:g} ULP"
                )
        if parts:
            lines.append(f"{component} is not batch-invariant (reported, not required): {'; '.join(parts)}")
    return lines


def left_lines(results: Sequence[LawResult]) -> list[str]:
    """The sizes a law did not judge in this profile (measurement ``sizes left``: a case estimated over the profile's
    time per case, laws/paths.py): one line per law, its dtypes, each size with its largest estimate."""
    laws: dict[str, tuple[list[str], dict[str, float], set[str], float]] = {}
    for r in results:
        for left in r.measurements.get("sizes left") or ():
            dtypes, sizes, profiles, _ = laws.setdefault(r.law_id, ([], {}, set(), left["budget s"]))
            dtypes += [r.dtype] if r.dtype not in dtypes else []
            sizes[left["case"]] = max(sizes.get(left["case"], 0.0), left["estimated s"])
            profiles.add(r.profile)
    return [
        f"{law} [{', '.join(dtypes)}] left {'; '.join(f'{c} (est. {s:.0f} s)' for c, s in sizes.items())} — over "
        f"{budget:g} s per case in profile {', '.join(sorted(profiles))}; --profile dev judges them"
        for law, (dtypes, sizes, profiles, budget) in laws.items()
    ]


def tier_line(results: Sequence[LawResult]) -> str:
    """Which tier judged the run's results (``LawResult.tier``): "tiers: 40 probabilistic, 31 deterministic (5
    by declaration: …), 4 empirical, 90 exact or bitwise" — "" when no result was judged. A result judged on the
    deterministic tier because a declaration kept the probabilistic one off says which declaration."""
    judged = [r for r in results if r.status not in ("skipped", "error")]
    if not judged:
        return ""
    parts = []
    for tier in TIERS:
        runs = [r for r in judged if r.tier == tier]
        if not runs:
            continue
        off = sorted({str(r.measurements[TIER_OFF]) for r in runs if TIER_OFF in r.measurements})
        n_off = sum(TIER_OFF in r.measurements for r in runs)
        why = f" ({n_off} by declaration: {'; '.join(off)})" if off and tier == "deterministic" else ""
        parts.append(f"{len(runs)} {tier}{why}")
    rest = sum(r.tier is None for r in judged)
    if rest:
        parts.append(f"{rest} exact or bitwise (no rounding bound)")
    return "tiers: " + ", ".join(parts)
