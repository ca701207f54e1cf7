"""Regression baselines: per-law error statistics of one run, and what got worse in a later run.

A baseline is a JSON file (``schema`` = ``SCHEMA``) with one record per law × dtype × device:
status, max and p99 ULP error against golden (where the law measures it), the headroom (max error ÷ bound,
where the law has a bound) and the number of examples,
plus the implementation, profile, seed and library versions it was recorded with::

    {"schema": "nanolm-verify/baseline/1", "impl": "torch", "profile": "ci", "seed": null, ...,
     "records": {"RMSNorm.rmsnorm_matches_golden[bf16-cpu]": {"status": "passed", "max_ulp": 0.5,
                                                               "p99_ulp": 0.5, "examples": 8}, ...}}

``compare`` reports every law whose error *grew*, even inside its bound — a kernel author sees "this commit
made bf16 RMSNorm 1 ULP worse" — and every law that passed before and does not now. Errors are compared
exactly (no tolerance by default): under a derandomized profile (``ci``) the inputs are the same in both
runs, so any growth is real; under a random profile a growth may be a new, harder input, and ``compare``
says so in its warnings.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from properties import __version__

__all__ = ["SCHEMA", "Change", "changes", "compare", "key", "load", "record", "snapshot"]

SCHEMA = "nanolm-verify/baseline/1"
_PASSING = ("passed", "xpassed")
_NEUTRAL = (*_PASSING, "skipped")


def key(law_id: str, dtype: str, device: str) -> str:
    """The record key ``<law id>[<dtype>-<device>]`` (the expectation files' notation)."""
    return f"{law_id}[{dtype}-{device}]"


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        value = float(value)  # the JSON report writes inf/nan as strings
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def snapshot(
    results: Iterable[Any], *, impl: str | None = None, profile: str | None = None, seed: int | None = None
) -> dict[str, Any]:
    """The baseline document of a run (``results``: LawResults or their ``to_json()`` dicts)."""
    records = {}
    for r in results:
        r = r if isinstance(r, dict) else r.to_json()
        records[key(r["law_id"], r["dtype"], r["device"])] = {
            "status": r["status"],
            "max_ulp": _num(r.get("max_ulp")),
            "p99_ulp": _num(r.get("p99_ulp")),
            "headroom": _num(r.get("headroom")),
            "examples": r.get("examples", 0),
        }
        profile = profile or r.get("profile")
        seed = seed if seed is not None else r.get("seed")
    return {
        "schema": SCHEMA,
        "impl": impl,
        "profile": profile,
        "seed": seed,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "suite_version": __version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "records": dict(sorted(records.items())),
    }


def record(results: Iterable[Any], path: str | Path, **meta: Any) -> dict[str, Any]:
    """Write the baseline of ``results`` to ``path`` (JSON; ``meta``: impl, profile, seed) and return it."""
    doc = snapshot(results, **meta)
    for rec in doc["records"].values():  # JSON has no inf: write "inf" as the check report does
        for stat in ("max_ulp", "p99_ulp", "headroom"):
            if rec[stat] is not None and not math.isfinite(rec[stat]):
                rec[stat] = repr(rec[stat])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return doc


def load(path: str | Path) -> dict[str, Any]:
    """Read a baseline; ValueError with a hint when it is not one (or of another schema version)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a baseline (invalid JSON: {exc})") from exc
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(
            f"{path} has schema {found!r}, expected {SCHEMA!r}; re-record it (delete the file and "
            f"run with --baseline again)"
        )
    problem = _problem(doc.get("records"))
    if problem:
        raise ValueError(f"{path}: {problem}; re-record it (delete the file and run with --baseline again)")
    return doc


_STATUSES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")
_NON_FINITE = ("inf", "-inf", "nan")  # how record() writes a non-finite statistic


def _problem(records: Any) -> str | None:
    """What is wrong with a baseline's records, naming the field (None: nothing). A statistic is a number, null
    or one of the texts record() writes for a non-finite one; any other text would compare as nothing."""
    if not isinstance(records, dict):
        return f"'records' must be an object of law records, found {type(records).__name__}"
    for k, rec in records.items():
        if not isinstance(rec, dict):
            return f"records[{k!r}] must be an object, found {type(rec).__name__}"
        if rec.get("status") not in _STATUSES:
            return f"records[{k!r}].status is {rec.get('status')!r}, expected one of {', '.join(_STATUSES)}"
        for stat in ("max_ulp", "p99_ulp", "headroom"):
            v = rec.get(stat)
            number = isinstance(v, (int, float)) and not isinstance(v, bool)
            if not (v is None or number or v in _NON_FINITE):
                return f"records[{k!r}].{stat} is {v!r}: expected a number, null or one of {', '.join(_NON_FINITE)}"
        n = rec.get("examples", 0)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            return f"records[{k!r}].examples is {n!r}: expected a count"
    return None


@dataclasses.dataclass(frozen=True)
class Change:
    """One difference between the baseline and the current run."""

    key: str
    kind: str  # "worse" | "better" | "broke" | "fixed" | "new" | "gone"
    text: str

    @property
    def is_regression(self) -> bool:
        return self.kind in ("worse", "broke")


def _label(k: str) -> str:
    law_id, _, rest = k.partition("[")
    dtype, _, device = rest.rstrip("]").partition("-")
    return f"{law_id} {dtype} {device}"


def changes(results: Iterable[Any], baseline: dict[str, Any] | str | Path) -> list[Change]:
    """Every difference between ``results`` and ``baseline`` (a loaded document or a path), regressions first."""
    base = baseline if isinstance(baseline, dict) else load(baseline)
    old, new = base["records"], snapshot(results)["records"]
    out = []
    for k in sorted(old.keys() | new.keys()):
        label = _label(k)
        if k not in new:
            out.append(Change(k, "gone", f"{label}: in the baseline, not run now"))
            continue
        if k not in old:
            out.append(Change(k, "new", f"{label}: not in the baseline ({new[k]['status']})"))
            continue
        before, after = old[k], new[k]
        if before["status"] in _PASSING and after["status"] not in _NEUTRAL:
            out.append(Change(k, "broke", f"{label}: {before['status']} → {after['status']}"))
        elif before["status"] not in _NEUTRAL and after["status"] in _PASSING:
            out.append(Change(k, "fixed", f"{label}: {before['status']} → {after['status']}"))
        for stat, name in (("max_ulp", "max ULP"), ("p99_ulp", "p99 ULP"), ("headroom", "headroom")):
            a, b = _num(before.get(stat)), _num(after.get(stat))
            if a is None or b is None or a == b:
                continue
            kind = "worse" if b > a else "better"
            delta = f"{b - a:+.2f}" if math.isfinite(b - a) else ("+inf" if b > a else "-inf")
            out.append(Change(k, kind, f"{label}: {name} {a:.2f} → {b:.2f} ({delta})"))
    return sorted(out, key=lambda c: not c.is_regression)


def compare(results: Iterable[Any], path: str | Path, *, profile: str | None = None) -> list[str]:
    """Regressions of ``results`` against the baseline at ``path``, one line each ([] when nothing got worse).

    A line reads ``RMSNorm.rmsnorm_matches_golden bf16 cpu: max ULP 0.50 → 1.50 (+1.00)``. When the
    baseline was recorded under another profile, a first line says the comparison is not like for like.
    """
    base = load(path)
    lines = [c.text for c in changes(results, base) if c.is_regression]
    if lines and profile is not None and base.get("profile") not in (None, profile):
        lines.insert(
            0,
            f"note: baseline {path} was recorded with profile {base['profile']!r}, this run used "
            f"{profile!r}: different inputs, so growth may be a harder input rather than a regression",
        )
    return lines
