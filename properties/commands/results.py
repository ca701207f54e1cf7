"""The results model below the renderers: what a run's law results *mean*, computed once for every format.

- the status table: one mark per status (and per cause of a failure) — cell text, CSS class, kill-matrix letter;
  counts and the exit status of a run;
- a comparison (``compare``): cells (implementation × component × dtype × device: laws passed, max / p99 ULP,
  accuracy class, headroom against golden, batch invariance), verdicts (one per law × dtype × implementation), the
  sentences where the implementations' accuracy differs, the league's ranking and each implementation's findings;
- the catalogue (``pitfalls``): a demonstration of one pitfall and the kill matrix.

The renderers (``properties.commands.render``: text, Markdown, HTML, JSON) only lay these out.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import math
import platform
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from golden.formats import NAMES, fmt
from properties import __version__
from properties.gallery import Pitfall
from properties.library import components as records
from properties.library.conventions import parse_all
from properties.numerics.bounds import accuracy_class as _accuracy_class
from properties.numerics.bounds import ulps_text
from properties.running import expectations
from properties.running.runner import LAWS, LawResult, select_laws
from properties.running.session import Run, SubjectInfo

__all__ = [
    "COMPARE_INTRO",
    "MARKS",
    "STATUSES",
    "Cell",
    "Demo",
    "ImplVerdict",
    "KillMatrix",
    "Mark",
    "Verdict",
    "build_cells",
    "compare",
    "counts",
    "exit_status",
    "findings",
    "headroom_text",
    "highlights",
    "impl_verdicts",
    "league_rows",
    "mark",
    "matrix",
    "number",
    "overview_lines",
    "overview_rows",
    "ulp_text",
]

DTYPES = NAMES
ATTAINS_BOUND = "attains_bound"  # a law tag: a correct result reaches its bound (an exact term dominates, or the
# law enumerates every value of the format), so a headroom near 1 is expected there, not a warning
STATUSES = ("passed", "failed", "skipped", "error", "xfailed", "xpassed")
GOLDEN_LAWS = ("_matches_golden", "_matches_stored_golden", "_gradients_match_golden")  # accuracy vs golden
LIBRARIES = ("torch", "numpy", "mpmath", "hypothesis", "transformers", "liger-kernel")


# ---------------------------------------------------------------------------------------------- the status table


class Mark(NamedTuple):
    """How one status (or the cause of a failure) reads: in a cell, as a CSS class, in the kill matrix."""

    text: str
    css: str
    letter: str
    meaning: str


MARKS: dict[str, Mark] = {
    "passed": Mark("ok", "ok", "·", "passed"),
    "failed": Mark("FAIL", "f", "✔", "failed: the law's own assertion"),
    "contract": Mark("CONTRACT", "f", "C", "failed: the component cannot be built, loaded or called per the contract"),
    "crash": Mark("CRASH", "f", "X", "failed: the implementation raised, exited or died"),
    "timeout": Mark("TIMEOUT", "f", "T", "failed: no verdict within the per-law time limit"),
    "skipped": Mark("skip", "sk", "–", "skipped"),
    "error": Mark("ERROR", "er", "E", "an error of the suite itself"),
    "xfailed": Mark("xfail", "xf", "?", "an expected failure failed"),
    "xpassed": Mark("XPASS", "xp", "?", "an expected failure passed"),
}


def mark(status: str, cause: str | None = None) -> Mark:
    """The mark of a result: a failure's by its cause (a law failure is FAIL), any other by its status."""
    return MARKS[cause] if status == "failed" and cause in MARKS else MARKS[status]


def counts(results: Iterable[Any]) -> dict[str, int]:
    """Results (LawResults or records) per status, every status present."""
    out = dict.fromkeys(STATUSES, 0)
    for r in results:
        out[_get(r, "status")] += 1
    return out


def exit_status(results: Iterable[Any]) -> int:
    """0 all passed (skips and expected failures allowed), 1 a law failed or the suite hit an error."""
    return 1 if any(_get(r, "status") in ("failed", "error") for r in results) else 0


def _get(r: Any, key: str) -> Any:
    return r[key] if isinstance(r, dict) else getattr(r, key)


def number(value: Any) -> float | None:
    """A measurement as a float (reports write inf as a string); None for none or NaN."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def headroom_text(h: float | None, failed: bool = False) -> str:
    """At most 4 characters: 0.31, 2.5 (failed: rounded up), 123, 2e5, inf; "" when nothing was measured.

    A passing value is truncated (0.9999 reads 0.99), a failing one rounded up (1.0001 reads 1.1): the text
    never crosses the pass/fail line."""
    if h is None or (isinstance(h, float) and math.isnan(h)):
        return ""
    if math.isinf(h):
        return "inf"
    if h < 1 or (h < 10 and not failed):  # truncated: a passing 0.9999 reads 0.99, never 1.00
        return f"{math.floor(h * 100) / 100:.2f}"
    if h < 9.9:  # rounded up: a failing 1.0001 reads 1.1, never 1.0
        return f"{math.ceil(h * 10) / 10:.1f}"
    if h < 10:
        return "10"
    if h < 999.5:
        return f"{h:.0f}"
    mantissa, exponent = f"{h:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def ulp_text(value: float | None) -> str:
    """A max ULP error as every report prints it (``bounds.ulps_text``: rounded up to 2 significant digits, never
    into a better accuracy class: 0.5000000000000042 reads 0.51); "—" for none."""
    return "—" if value is None or math.isnan(value) else ulps_text(value)


def accuracy_class(max_ulp: float | None) -> str:
    """``bounds.accuracy_class`` (the suite's definition); "—" when nothing was measured."""
    return "—" if number(max_ulp) is None else _accuracy_class(max_ulp)


def library_versions(names: Sequence[str] = LIBRARIES) -> dict[str, str | None]:
    """Installed versions (None: not installed), read from the package metadata: nothing is imported."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


# ---------------------------------------------------------------------------------------------- a comparison


@dataclasses.dataclass
class Cell:
    """One implementation × component × dtype × device of a comparison."""

    impl: str
    component: str
    dtype: str
    device: str
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    max_ulp: float | None = None
    p99_ulp: float | None = None
    worst_law: str | None = None
    headroom: float | None = None  # max error ÷ bound over the cell's laws against golden (≤ 1 passes)
    headroom_law: str | None = None
    worst_input: dict[str, Any] | None = None
    batch_invariant: bool | None = None  # measured by the batch-invariance laws; None: none ran
    batch_source: str = ""
    problems: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (law, status, message)
    skip_reason: str = ""

    @property
    def run(self) -> int:
        return sum(self.counts.get(s, 0) for s in STATUSES if s != "skipped")

    @property
    def passed(self) -> int:
        return self.counts.get("passed", 0) + self.counts.get("xpassed", 0)

    @property
    def accuracy(self) -> str:
        return accuracy_class(self.max_ulp)

    @property
    def laws_text(self) -> str:
        if not self.run:
            return "skipped"
        extra = [f"{self.counts[s]} {s}" for s in ("xfailed", "xpassed", "error") if self.counts.get(s)]
        return f"{self.passed}/{self.run}" + (f" ({', '.join(extra)})" if extra else "")

    @property
    def batch_text(self) -> str:
        return {True: "yes", False: "no", None: "—"}[self.batch_invariant]


def _batch_invariant(record: dict[str, Any]) -> bool | None:
    """What a batch-invariance law (``*_is_batch_invariant``: ``op(x[:k]) == op(x)[:k]`` bitwise) measured: its
    ``batch_invariant`` measurement where it reports one (a declared batch-variant implementation), else whether
    it held; None for any other law, or one that did not run."""
    if "batch_invariant" not in record["law_id"] or record["status"] not in ("passed", "failed", "xfailed", "xpassed"):
        return None
    measured = (record.get("measurements") or {}).get("batch_invariant")
    return measured if isinstance(measured, bool) else record["status"] in ("passed", "xpassed")


def _component_order(component: str) -> int:
    order = (*records.names(), "Module")
    return order.index(component) if component in order else 99


def build_cells(impl_name: str, results: Iterable[Any]) -> list[Cell]:
    """Aggregate law results (LawResults or their JSON records) into cells, in component / dtype / device order."""
    cells: dict[tuple[str, str, str], Cell] = {}
    for r in results:
        r = r if isinstance(r, dict) else r.to_json()
        key = (r["component"], r["dtype"], r["device"])
        cell = cells.setdefault(key, Cell(impl_name, *key))
        cell.counts[r["status"]] = cell.counts.get(r["status"], 0) + 1
        if r["status"] == "skipped" and not cell.skip_reason:
            cell.skip_reason = r.get("message", "")
        if r["status"] in ("failed", "error", "xfailed", "xpassed"):
            cell.problems.append((r["law_id"], r["status"], r.get("message", "")))
        max_ulp, p99 = number(r.get("max_ulp")), number(r.get("p99_ulp"))
        if max_ulp is not None and (cell.max_ulp is None or max_ulp > cell.max_ulp):
            cell.max_ulp, cell.worst_law, cell.worst_input = max_ulp, r["law_id"], r.get("worst_input")
        room = number(r.get("headroom")) if r["law_id"].endswith(GOLDEN_LAWS) else None
        if room is not None and r["status"] != "skipped" and (cell.headroom is None or room > cell.headroom):
            cell.headroom, cell.headroom_law = room, r["law_id"]
        if p99 is not None:
            cell.p99_ulp = p99 if cell.p99_ulp is None else max(cell.p99_ulp, p99)
        batch = _batch_invariant(r)
        if batch is not None:
            cell.batch_invariant = batch if cell.batch_invariant is None else cell.batch_invariant and batch
            cell.batch_source = r["law_id"]
    return sorted(
        cells.values(),
        key=lambda c: (_component_order(c.component), DTYPES.index(c.dtype) if c.dtype in DTYPES else 9, c.device),
    )


def compare(run: Run) -> dict[str, Any]:
    """The comparison of a session's run: {"impls": [...], "cells": [...], "results": {spec: records}, "meta",
    "interrupted", "unavailable"} — what every renderer of ``compare`` takes."""
    impls, cells, raw = [], [], {}
    for subject in run.subjects:
        info = subject.info
        raw[info.spec] = [r.to_json() for r in subject.results]
        cells += build_cells(info.spec, raw[info.spec])
        impls.append(
            {
                "spec": info.spec,
                "module": info.module,
                "provided": list(info.provided),
                "skip_reason": info.skip_reason,
                "conventions": info.conventions,
                "declared": declared(info),
            }
        )
    specs = [*(s.info.spec for s in run.subjects), *run.unavailable]
    versions = {"nanolm-verify": __version__, "torch": library_versions(["torch"])["torch"]}
    versions |= {"python": platform.python_version(), **_present(library_versions(["transformers"]))}
    meta = {
        "profile": run.selection.profile,
        "devices": list(run.selection.devices),
        "seed": run.selection.seed,
        "versions": versions,
        "platform": platform.platform(),
        "date": datetime.date.today().isoformat(),
        "command": run.selection.command("compare", *specs),  # complete: --only, --dtype, --seed … included
    }
    return {
        "impls": impls,
        "cells": cells,
        "results": raw,
        "meta": meta,
        "interrupted": run.interrupted,
        "unavailable": dict(run.unavailable),
    }


def _present(versions: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in versions.items() if v is not None}


def declared(info: SubjectInfo) -> dict[str, str]:
    """{component: its declared conventions in one line (``Conventions.summary()``)}, components that declare."""
    parsed = parse_all(info.conventions, records.names())
    return {c: conv.summary() for c, conv in parsed.items() if c in info.provided and conv.summary()}


def conventions_line(info: dict[str, Any], component: str) -> str:
    """One implementation's conventions for one component, as the report states them once."""
    summary = info.get("declared", {}).get(component)
    if summary:
        return summary
    if info["module"] == "nanolm_core" or info["conventions"].get(component):
        return "the contract's reference conventions"
    return "none declared"


def exit_status_of(report: dict[str, Any]) -> int:
    """A comparison's exit status: 128 + the signal when interrupted, else 1 when a law failed (or the suite hit an
    error) for any implementation, else 0 (every law passed, was skipped or failed as expected)."""
    if report.get("interrupted"):
        return 128 + int(report["interrupted"])
    return exit_status(r for records in report["results"].values() for r in records)


def highlights(cells: Sequence[Cell]) -> list[str]:
    """One sentence for every component × dtype × device where the implementations' accuracy classes differ:
    the implementations grouped by class, most accurate first, with their max ULP error against golden."""
    groups: dict[tuple[str, str, str], list[Cell]] = {}
    for cell in cells:
        if cell.max_ulp is not None:
            groups.setdefault((cell.component, cell.dtype, cell.device), []).append(cell)
    lines = []
    for (component, dtype, device), group in groups.items():
        if len({c.accuracy for c in group}) < 2:
            continue
        classes: dict[str, list[Cell]] = {}
        for c in sorted(group, key=lambda c: c.max_ulp):
            classes.setdefault(c.accuracy, []).append(c)
        parts = [  # a class "≤ k ULP" states its max (k: the max rounded up); a named class gets its number
            f"{name}: {', '.join(c.impl for c in members)}"
            + ("" if name.startswith("≤") else f" (max {ulp_text(max(c.max_ulp for c in members))} ULP)")
            for name, members in classes.items()
        ]
        lines.append(f"{component} {dtype} {device} — " + "; ".join(parts))
    return lines


def components(cells: Sequence[Cell]) -> list[str]:
    """The components the cells cover, in the contract's order."""
    return [c for c in (*records.names(), "Module") if any(cell.component == c for cell in cells)]


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One implementation × law × dtype × device of the side by side: its mark (css class), text and tooltip."""

    css: str  # a Mark's css; passed with a bound: p0 p1 p2 (headroom < ½, < 0.9, ≥ 0.9), pb on a law whose bound a
    # correct result attains (ATTAINS_BOUND: near 1 by construction, not a warning); na, none: no record
    text: str
    title: str
    headroom: float | None = None


def verdict(record: dict[str, Any] | None, law_id: str, dtype: str) -> Verdict:
    """The verdict of one law record (None: no record — not defined for the dtype, or not run)."""
    if record is None:
        law = LAWS.get(law_id)
        if law is not None and dtype not in {fmt(d).name for d in law.dtypes}:
            return Verdict("na", "n/a", f"the law is not defined for {dtype}")
        return Verdict("none", "—", "not run")
    status, cause, h = record["status"], record.get("cause"), number(record.get("headroom"))
    parts = [status] + ([f"cause {cause}"] if cause else [])
    parts += [f"headroom {headroom_text(h, failed=h > 1)}"] if h is not None else []
    parts += [f"max {ulp_text(number(record['max_ulp']))} ULP"] if number(record.get("max_ulp")) is not None else []
    first = (record.get("message") or "").strip().splitlines()
    title = "; ".join(parts) + (f" — {first[0][:200]}" if first and status != "passed" else "")
    m = mark(status, cause)
    if status == "passed" and h is not None:
        attains = ATTAINS_BOUND in getattr(LAWS.get(law_id), "tags", ())
        css = "pb" if attains else "p0" if h < 0.5 else "p1" if h < 0.9 else "p2"
        title += "; this law's bound is attained by a correct result: a headroom near 1 is expected" if attains else ""
        return Verdict(css, headroom_text(h), title, h)
    if status in ("failed", "xfailed") and (status != "failed" or cause in (None, "law")):
        return Verdict(m.css, f"{m.text} {headroom_text(h, failed=True)}".strip(), title, h)
    return Verdict(m.css, m.text, title, h)


SEVERITY = ("na", "none", "sk", "ok", "pb", "p0", "xf", "p1", "p2", "xp", "f", "er")  # least to most alarming


@dataclasses.dataclass(frozen=True)
class ImplVerdict:
    """One implementation's verdict over a comparison: PASS, FAIL, ERROR or UNAVAILABLE, coloured (``css``) as its
    most alarming law × dtype cell is, with that cell (``worst``: law id, dtype, device, its Verdict)."""

    spec: str
    word: str
    css: str
    counts: dict[str, int]
    worst: tuple[str, str, str, Verdict] | None = None
    reason: str = ""
    attained: bool = False  # a law that attains its bound by design (css pb) used more of it than ``worst`` did

    @property
    def laws_text(self) -> str:
        n = self.counts
        ran = sum(v for k, v in n.items() if k != "skipped")
        extra = [f"{n[s]} {s}" for s in ("failed", "error", "xfailed", "xpassed", "skipped") if n.get(s)]
        return f"{n.get('passed', 0)}/{ran} laws passed" + (f", {', '.join(extra)}" if extra else "")


def impl_verdicts(report: dict[str, Any]) -> list[ImplVerdict]:
    """Each implementation's verdict, in the report's order (those that could not be imported last)."""
    out = []
    for info in report["impls"]:
        records = report["results"][info["spec"]]
        n = counts(records)
        cells = [(r["law_id"], r["dtype"], r["device"], verdict(r, r["law_id"], r["dtype"])) for r in records]
        worst = max(cells, key=lambda c: (SEVERITY.index(c[3].css), c[3].headroom or 0.0), default=None)
        if n["failed"]:
            word = "FAIL"
        elif n["error"]:
            word = "ERROR"
        else:
            word = "PASS" if records else "SKIP"
        room = worst[3].headroom or 0.0 if worst else 0.0
        attained = any(c[3].css == "pb" and (c[3].headroom or 0.0) > room for c in cells)
        out.append(ImplVerdict(info["spec"], word, worst[3].css if worst else "sk", n, worst, attained=attained))
    for spec, reason in (report.get("unavailable") or {}).items():
        out.append(ImplVerdict(spec, "UNAVAILABLE", "er", {}, None, reason.splitlines()[0] if reason else ""))
    return out


def report_dtypes(report: dict[str, Any]) -> list[str]:
    seen = {r["dtype"] for records in report["results"].values() for r in records}
    return [d for d in DTYPES if d in seen]


def matrix(report: dict[str, Any], component: str) -> list[tuple[str, str, str, list[Verdict]]]:
    """Rows (law id, dtype, device, one Verdict per implementation) of one component, in law / dtype order;
    every dtype of the report appears for every law (a law not defined for it: "n/a")."""
    specs = [info["spec"] for info in report["impls"]]
    index = {(spec, r["law_id"], r["dtype"], r["device"]): r for spec in specs for r in report["results"][spec]}
    ran = {r["law_id"] for records in report["results"].values() for r in records}
    laws = [law.id for law in select_laws(None) if law.component == component and law.id in ran]
    return [
        (law_id, dtype, device, [verdict(index.get((spec, law_id, dtype, device)), law_id, dtype) for spec in specs])
        for law_id in laws
        for dtype in report_dtypes(report)
        for device in report["meta"]["devices"]
    ]


COMPARE_INTRO = (
    "Each cell is one implementation × law × dtype: the *headroom*, max |error| ÷ derived bound over every "
    "example drawn (≤ 1 passes; the number to watch). The max ULP error against golden is in the tooltips and "
    "results.json: near a cancellation (an output much smaller than its inputs) or an underflow it is large "
    "while the headroom stays small. ok: passed, no bound (an exact or bitwise law); FAIL h: failed by h; "
    "CRASH / CONTRACT / TIMEOUT: the cause of a failure; xfail: an expected failure (the implementation's "
    "expectation file); n/a: the law is not defined for that dtype."
)


def overview_lines(cell: Cell | None) -> list[str]:
    """Lines of one implementation's overview cell: laws passed, headroom, max ULP (class), batch invariance."""
    if cell is None:
        return ["—"]
    if not cell.run:
        return ["skipped"]
    room = headroom_text(cell.headroom, failed=bool(cell.headroom and cell.headroom > 1)) or "—"
    return [
        f"laws {cell.laws_text}",
        f"headroom vs golden {room}",
        f"max {ulp_text(cell.max_ulp)} ULP" + (f" ({cell.accuracy})" if cell.accuracy[0] not in "≤—" else ""),
        f"batch-invariant {cell.batch_text}",
    ]


def overview_rows(report: dict[str, Any], component: str) -> list[tuple[str, str, list[Cell | None]]]:
    """Rows (dtype, device, one Cell per implementation) of one component's overview."""
    specs = [info["spec"] for info in report["impls"]]
    index = {(c.impl, c.dtype, c.device): c for c in report["cells"] if c.component == component}
    keys = list(dict.fromkeys((c.dtype, c.device) for c in report["cells"] if c.component == component))
    return [(dtype, device, [index.get((spec, dtype, device)) for spec in specs]) for dtype, device in keys]


def problems(report: dict[str, Any]) -> list[tuple[Cell, tuple[str, str, str]]]:
    """Every failure, error, expected failure and unexpected pass of a comparison, with its cell."""
    return [(c, p) for c in report["cells"] for p in c.problems]


# ---------------------------------------------------------------------------------------------- the league


def findings(spec: str) -> tuple[list[str], list[str]]:
    """(the "# Finding:" sentences, one line per distinct xfail reason) of an implementation's shipped
    expectation file (properties/expectations/<id>.txt); empty when it has none."""
    path = expectations.path_for(spec)
    if not path.exists():
        return [], []
    lines = path.read_text(encoding="utf-8").splitlines()
    said: list[str] = []
    for i, line in enumerate(lines):
        if not line.startswith("# Finding:"):
            continue
        text = [line.removeprefix("# Finding:").strip()]
        for more in lines[i + 1 :]:  # its continuation: comment lines up to a blank one, evidence or quoted code
            body = more.removeprefix("#")
            if not more.startswith("# ") or body.startswith(("   ", " Evidence", " Finding")) or not body.strip():
                break
            text.append(body.strip())
        said.append(" ".join(text))
    reasons: dict[str, list[str]] = {}
    for entry in expectations.load(spec, path):
        if entry.action == "xfail":
            reasons.setdefault(entry.reason, []).append(f"{entry.law}[{entry.dtype}]")
    return said, [f"{reason} ({len(laws)} law run{'s' if len(laws) > 1 else ''})" for reason, laws in reasons.items()]


def league_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per implementation, best first: unexpected failures, then the share of expected ones among the law
    runs, then the worst headroom of the laws against golden (how much of the derived bound the largest error
    used)."""
    rows = []
    for info in report["impls"]:
        records = report["results"].get(info["spec"], [])
        n = counts(records)
        worst: dict[str, float | None] = {}
        for dtype in DTYPES:
            rooms = [
                number(r.get("headroom"))
                for r in records
                if r["dtype"] == dtype and r["law_id"].endswith(GOLDEN_LAWS) and r["status"] != "skipped"
            ]
            rooms = [h for h in rooms if h is not None]
            worst[dtype] = max(rooms) if rooms else None
        finite = [h for h in worst.values() if h is not None]
        ran = sum(n[s] for s in STATUSES if s != "skipped")
        key = (n["failed"] + n["error"], n["xfailed"] / max(1, n["passed"] + n["failed"] + n["xfailed"]))
        rows.append(
            {
                "spec": info["spec"],
                "provided": info["provided"],
                "skip_reason": info["skip_reason"],
                "ran": ran,
                **n,
                "worst": worst,
                "key": (*key, max(finite) if finite else math.inf),
            }
        )
    return sorted(rows, key=lambda row: (row["ran"] == 0, row["key"]))


def declared_xfails(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """{the declaration that excused a failure (the runner's first message line): how many law runs}."""
    out: dict[str, int] = {}
    for r in records:
        first = (r.get("message") or "").splitlines()[:1]
        if r["status"] == "xfailed" and first and first[0].startswith("declared "):
            out[first[0]] = out.get(first[0], 0) + 1
    return out


def unexpected(records: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """{"`law id` (cause)": [dtypes]} of the failures and errors no expectation covers."""
    out: dict[str, list[str]] = {}
    for r in records:
        if r["status"] in ("failed", "error"):
            out.setdefault(f"`{r['law_id']}` ({r.get('cause') or r['status']})", []).append(r["dtype"])
    return out


# ---------------------------------------------------------------------------------------------- the catalogue


@dataclasses.dataclass
class Demo:
    """The outcome of demonstrating one pitfall: the law's result on it (and on the reference, if asked)."""

    pitfall: Pitfall
    result: LawResult
    reference: LawResult | None = None  # the same law on nanolm_core, when run

    @property
    def name(self) -> str:
        return self.pitfall.name

    @property
    def caught(self) -> bool:
        """The law's own assertion failed — not a crash, contract failure or timeout of the implementation."""
        return self.result.status == "failed" and self.result.cause == "law"

    @property
    def ok(self) -> bool:
        """As expected: caught (or a declared known gap, ``pitfall.pending``), and the reference (if run) passes."""
        expected = self.caught or bool(self.pitfall.pending)
        ref = self.reference
        ref_ok = ref is None or ref.status == "passed" or (bool(self.pitfall.pending) and ref.status == "skipped")
        return expected and ref_ok  # a pending entry's law may not run here at all (no accelerator): skipped

    @property
    def outcome(self) -> str:
        """ "caught", or why not: the status, with the cause of a failure that is not the law's."""
        if self.caught:
            return "caught"
        r = self.result
        return f"{r.status} (cause {r.cause})" if r.status == "failed" else r.status


def examples_needed(result: LawResult) -> str:
    """How much it took to catch: "2" examples until the first failure (Hypothesis laws), "1 check" for a plain
    law, "exhaustive (65280 values)" for a law that checks every value of a dtype at once."""
    law = LAWS.get(result.law_id)
    if law is not None and law.uses_hypothesis:
        return str(result.found_after or result.examples)
    return "1 check" if result.examples <= 1 else f"exhaustive ({result.examples} values)"


@dataclasses.dataclass
class KillMatrix:
    """Every catalogue entry against its designated law (with the reference on the same law and dtype) and
    against every other law of its component; the reference against every law."""

    profile: str
    demos: dict[str, Demo]  # name → the verdict of its designated law, reference included
    rows: dict[str, dict[str, LawResult]]  # name → {law id: LawResult} for every law of its component
    reference: dict[str, LawResult]  # law id → LawResult of nanolm_core (fp32 where the law applies)

    @property
    def ok(self) -> bool:
        """Every entry as expected, and the reference passes every law that runs here (an accelerator law skips)."""
        demos_ok = all(d.ok for d in self.demos.values())
        return demos_ok and all(r.status in ("passed", "skipped") for r in self.reference.values())


def kill_cell(result: LawResult) -> str:
    """A kill-matrix cell: ``✔ n`` the law's assertion failed after n examples (``✔ all``: exhaustively), else the
    mark's letter (· passed, – skipped, C / X / T a failure of another cause, E a suite error)."""
    if result.status == "failed" and result.cause == "law":
        needed = examples_needed(result)
        return "✔ " + ("all" if needed.startswith("exhaustive") else needed.removesuffix(" check"))
    return mark(result.status, result.cause).letter
