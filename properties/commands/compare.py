"""``nanolm-verify compare IMPL... --out DIR``: implementations side by side, as Markdown and a static HTML page.

For every implementation × component × dtype × device the report gives: laws passed (of those run; expected
failures counted apart), the max and p99 ULP error against golden over every law that measures it, the
accuracy class of that max (``properties.bounds.accuracy_class``), batch invariance (``op(x[:k]) ==
op(x)[:k]`` bitwise) and the worst input. Beside the numbers: each adapter's declared conventions, the
comparisons whose accuracy class differs, and every failure with its message.

Files written to DIR: ``report.md``, ``index.html`` (self-contained, no scripts) and ``results.json`` (every
law record, expectations applied). Exit status: 0 every law passed (or failed as expected), 1 a law failed
for some implementation (the report is written either way), 2 usage or import error.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import html
import json
import math
import platform
import shlex
import signal
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from golden.formats import NAMES, fmt
from properties import __version__
from properties.commands import arguments
from properties.commands.helptext import Formatter, adapters_text
from properties.commands.report import COMPARE_SCHEMA, Progress, headroom_text, wrap_block
from properties.library.conventions import parse_all
from properties.numerics.bounds import accuracy_class as _accuracy_class
from properties.running import expectations, session
from properties.running.loading import ADAPTERS, COMPONENTS, ImplementationError
from properties.running.runner import LAWS, UsageError, select_laws
from properties.running.session import Run, Selection, SubjectInfo

__all__ = ["Cell", "build", "build_cells", "main", "register", "render_html", "render_markdown"]

DTYPES = NAMES
_COUNTED = ("passed", "failed", "xfailed", "xpassed", "error")
_GOLDEN_LAWS = ("_matches_golden", "_matches_stored_golden", "_gradients_match_golden")  # accuracy vs golden


# ---------------------------------------------------------------------------------------------- measuring


def accuracy_class(max_ulp: float | None) -> str:
    """``bounds.accuracy_class`` (the suite's definition); "—" when nothing was measured."""
    if max_ulp is None or (isinstance(max_ulp, float) and math.isnan(max_ulp)):
        return "—"
    return _accuracy_class(max_ulp)


# ---------------------------------------------------------------------------------------------- aggregating


@dataclasses.dataclass
class Cell:
    """One implementation × component × dtype × device of the report."""

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
    batch_invariant: bool | None = None
    batch_source: str = ""
    problems: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (law, status, message)
    skip_reason: str = ""

    @property
    def run(self) -> int:
        return sum(self.counts.get(s, 0) for s in _COUNTED)

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
        text = f"{self.passed}/{self.run}"
        extra = [f"{self.counts[s]} {s}" for s in ("xfailed", "xpassed", "error") if self.counts.get(s)]
        return text + (f" ({', '.join(extra)})" if extra else "")

    @property
    def batch_text(self) -> str:
        return {True: "yes", False: "no", None: "—"}[self.batch_invariant]


def _num(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _batch_invariant(record: dict[str, Any]) -> bool | None:
    """What a batch-invariance law (``*_is_batch_invariant``: ``op(x[:k]) == op(x)[:k]`` bitwise) measured: its
    ``batch_invariant`` measurement where it reports one (a declared batch-variant implementation), else whether
    it held; None for any other law, or one that did not run."""
    if "batch_invariant" not in record["law_id"] or record["status"] not in ("passed", "failed", "xfailed", "xpassed"):
        return None
    measured = (record.get("measurements") or {}).get("batch_invariant")
    return measured if isinstance(measured, bool) else record["status"] in ("passed", "xpassed")


def build_cells(impl_name: str, results: Iterable[Any]) -> list[Cell]:
    """Aggregate law results (LawResults or their JSON records) into cells, in component / dtype / device order."""
    cells: dict[tuple[str, str, str], Cell] = {}
    for r in results:
        r = r if isinstance(r, dict) else r.to_json()
        cell = cells.setdefault(
            (r["component"], r["dtype"], r["device"]), Cell(impl_name, r["component"], r["dtype"], r["device"])
        )
        cell.counts[r["status"]] = cell.counts.get(r["status"], 0) + 1
        if r["status"] == "skipped" and not cell.skip_reason:
            cell.skip_reason = r.get("message", "")
        if r["status"] in ("failed", "error", "xfailed", "xpassed"):
            cell.problems.append((r["law_id"], r["status"], r.get("message", "")))
        max_ulp, p99 = _num(r.get("max_ulp")), _num(r.get("p99_ulp"))
        if max_ulp is not None and (cell.max_ulp is None or max_ulp > cell.max_ulp):
            cell.max_ulp, cell.worst_law, cell.worst_input = max_ulp, r["law_id"], r.get("worst_input")
        room = _num(r.get("headroom")) if r["law_id"].endswith(_GOLDEN_LAWS) else None
        if room is not None and r["status"] != "skipped" and (cell.headroom is None or room > cell.headroom):
            cell.headroom, cell.headroom_law = room, r["law_id"]
        if p99 is not None:
            cell.p99_ulp = p99 if cell.p99_ulp is None else max(cell.p99_ulp, p99)
        batch = _batch_invariant(r)
        if batch is not None:
            cell.batch_invariant = batch if cell.batch_invariant is None else cell.batch_invariant and batch
            cell.batch_source = r["law_id"]
    order = {c: i for i, c in enumerate((*COMPONENTS, "Module"))}
    return sorted(
        cells.values(),
        key=lambda c: (order.get(c.component, 99), DTYPES.index(c.dtype) if c.dtype in DTYPES else 9, c.device),
    )


# ---------------------------------------------------------------------------------------------- running


def build(run: Run) -> dict[str, Any]:
    """The comparison of a session's run: {"impls": [...], "cells": [...], "results": {spec: records}, "meta",
    "interrupted"} (what the renderers take)."""
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
                "declared": _declared_summary(info),
            }
        )
    specs = [*(s.info.spec for s in run.subjects), *run.unavailable]
    report = {"impls": impls, "cells": cells, "results": raw, "meta": _meta(run.selection, specs)}
    report["interrupted"] = run.interrupted
    return report


def _declared_summary(info: SubjectInfo) -> dict[str, str]:
    """{component: its declared conventions in one line (``Conventions.summary()``)}, components that declare."""
    parsed = parse_all(info.conventions, COMPONENTS)
    return {c: conv.summary() for c, conv in parsed.items() if c in info.provided and conv.summary()}


def _meta(selection: Selection, specs: Sequence[str]) -> dict[str, Any]:
    versions = {"nanolm-verify": __version__, "torch": torch.__version__, "python": platform.python_version()}
    try:
        import transformers

        versions["transformers"] = transformers.__version__
    except ImportError:
        pass
    return {
        "profile": selection.profile,
        "devices": list(selection.devices),
        "seed": selection.seed,
        "versions": versions,
        "platform": platform.platform(),
        "date": datetime.date.today().isoformat(),
        "command": selection.command("compare", *specs),  # complete: --only, --dtype, --seed … included
    }


# ---------------------------------------------------------------------------------------------- rendering


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if math.isinf(value):
        return "inf"
    text = f"{value:.5g}"
    shown = float(text)
    if any(shown <= edge < value or value < edge <= shown for edge in (0.5, 1.0)):
        text = f"{value:.17g}"  # e.g. 0.5000000000000042: not correctly rounded, and it must not read as 0.5
    return text


def _compact(worst: dict[str, Any] | None, limit: int = 90) -> str:
    """A one-line description of an input: scalar fields as key=value, long lists by their length."""
    if not worst:
        return "—"
    parts = []
    for key, value in worst.items():
        if isinstance(value, (list, tuple)):
            value = f"[{len(value)} values]" if len(value) > 4 else value
        parts.append(f"{key}={value}")
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def highlights(cells: Sequence[Cell], conventions: dict[str, dict[str, dict[str, Any]]] | None = None) -> list[str]:
    """One sentence for every component × dtype × device where the implementations' accuracy classes differ:
    the implementations grouped by class, most accurate first, with their max ULP error against golden.

    ``conventions`` ({impl: {component: CONVENTIONS entry}}) is accepted for compatibility: the conventions are
    stated once per implementation in the report, not repeated here.
    """
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
        parts = [
            f"{name}: {', '.join(c.impl for c in members)} (max {_fmt(max(c.max_ulp for c in members))} ULP)"
            for name, members in classes.items()
        ]
        lines.append(f"{component} {dtype} {device} — " + "; ".join(parts))
    return lines


def _declared(report: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    return {info["spec"]: info["conventions"] for info in report["impls"]}


def _components(cells: Sequence[Cell]) -> list[str]:
    return [c for c in (*COMPONENTS, "Module") if any(cell.component == c for cell in cells)]


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# ---------------------------------------------------------------------------------------------- the side-by-side


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One implementation × law × dtype × device cell of the side-by-side: css class, text, tooltip."""

    css: str  # p0 p1 p2 (passed: headroom < ½, < 0.9, ≥ 0.9), ok (passed, no bound), f, xf, xp, sk, er, na, none
    text: str
    title: str


def verdict(record: dict[str, Any] | None, law_id: str, dtype: str) -> Verdict:
    """The cell of one law record (None: no record — not defined for the dtype, or not run)."""
    if record is None:
        law = LAWS.get(law_id)
        if law is not None and dtype not in {fmt(d).name for d in law.dtypes}:
            return Verdict("na", "n/a", f"the law is not defined for {dtype}")
        return Verdict("none", "—", "not run")
    status, h = record["status"], _num(record.get("headroom"))
    parts = [status] + ([f"cause {record['cause']}"] if record.get("cause") else [])
    if h is not None:
        parts.append(f"headroom {headroom_text(h, failed=h > 1)}")
    if _num(record.get("max_ulp")) is not None:
        parts.append(f"max {_fmt(_num(record['max_ulp']))} ULP")
    first = (record.get("message") or "").strip().splitlines()
    title = "; ".join(parts) + (f" — {first[0][:200]}" if first and status != "passed" else "")
    if status == "passed":
        if h is None:
            return Verdict("ok", "ok", title)
        css = "p0" if h < 0.5 else "p1" if h < 0.9 else "p2"
        return Verdict(css, headroom_text(h), title)
    if status == "failed":
        text = {"crash": "CRASH", "contract": "CONTRACT", "timeout": "TIMEOUT"}.get(record.get("cause") or "")
        return Verdict("f", text or f"FAIL {headroom_text(h, failed=True)}".strip(), title)
    if status == "xfailed":
        return Verdict("xf", f"xfail {headroom_text(h, failed=True)}".strip(), title)
    css, text = {"xpassed": ("xp", "XPASS"), "skipped": ("sk", "skip"), "error": ("er", "ERROR")}[status]
    return Verdict(css, text, title)


def _dtypes(report: dict[str, Any]) -> list[str]:
    seen = {r["dtype"] for records in report["results"].values() for r in records}
    return [d for d in DTYPES if d in seen]


def matrix(report: dict[str, Any], component: str) -> list[tuple[str, str, str, list[Verdict]]]:
    """Rows (law id, dtype, device, one Verdict per implementation) of one component, in law / dtype order;
    every dtype of the report appears for every law (a law not defined for it: "n/a")."""
    specs = [info["spec"] for info in report["impls"]]
    index = {(spec, r["law_id"], r["dtype"], r["device"]): r for spec in specs for r in report["results"][spec]}
    laws = [law.id for law in select_laws(None) if law.component == component]
    ran = {r["law_id"] for records in report["results"].values() for r in records}
    devices = report["meta"]["devices"]
    rows = []
    for law_id in (law for law in laws if law in ran):
        for dtype in _dtypes(report):
            for device in devices:
                cells = [verdict(index.get((spec, law_id, dtype, device)), law_id, dtype) for spec in specs]
                rows.append((law_id, dtype, device, cells))
    return rows


def _overview(cell: Cell | None) -> list[str]:
    """Lines of one implementation's overview cell: laws passed, headroom, max ULP (class), batch invariance."""
    if cell is None:
        return ["—"]
    if not cell.run:
        return ["skipped"]
    room = headroom_text(cell.headroom, failed=bool(cell.headroom and cell.headroom > 1)) or "—"
    return [
        f"laws {cell.laws_text}",
        f"headroom vs golden {room}",
        f"max {_fmt(cell.max_ulp)} ULP" + (f" ({cell.accuracy})" if cell.max_ulp is not None else ""),
        f"batch-invariant {cell.batch_text}",
    ]


def _overview_rows(report: dict[str, Any], component: str) -> list[tuple[str, str, list[Cell | None]]]:
    specs = [info["spec"] for info in report["impls"]]
    index = {(c.impl, c.dtype, c.device): c for c in report["cells"] if c.component == component}
    keys = list(dict.fromkeys((c.dtype, c.device) for c in report["cells"] if c.component == component))
    return [(dtype, device, [index.get((spec, dtype, device)) for spec in specs]) for dtype, device in keys]


def _conventions_line(info: dict[str, Any], component: str) -> str:
    summary = info.get("declared", {}).get(component)
    if summary:
        return summary
    if info["module"] == "nanolm_core" or info["conventions"].get(component):
        return "the contract's reference conventions"
    return "none declared"


_INTRO = (
    "Each cell is one implementation × law × dtype: the *headroom*, max |error| ÷ derived bound over every "
    "example drawn (≤ 1 passes; the number to watch). The max ULP error against golden is in the tooltips and "
    "results.json: near a cancellation (an output much smaller than its inputs) or an underflow it is large "
    "while the headroom stays small. ok: passed, no bound (an exact or bitwise law); FAIL h: failed by h; "
    "CRASH / CONTRACT / TIMEOUT: the cause of a failure; xfail: an expected failure (the implementation's "
    "expectation file); n/a: the law is not defined for that dtype."
)


def render_markdown(report: dict[str, Any]) -> str:
    """The report as GitHub-flavoured Markdown: implementations in columns."""
    meta, cells = report["meta"], report["cells"]
    specs = [info["spec"] for info in report["impls"]]
    out = [
        "# Implementation comparison",
        "",
        f"Profile `{meta['profile']}`, devices {', '.join(meta['devices'])}, {meta['date']}; "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + ".",
        "",
        f"Reproduce: `{meta['command']}`",
        "",
        _INTRO.replace("*headroom*", "**headroom**"),
        "",
    ]
    if report.get("interrupted"):
        out += [f"**Interrupted** ({signal.Signals(report['interrupted']).name}): partial results.", ""]
    out += ["## Implementations and their declared conventions", ""]
    for info in report["impls"]:
        out.append(
            f"- **{info['spec']}** (`{info['module']}`)" + (f": {info['skip_reason']}" if info["skip_reason"] else "")
        )
        out += [f"  - {c}: {_md_escape(_conventions_line(info, c))}" for c in info["provided"]]
    out.append("")
    lines = highlights(cells, _declared(report))
    if lines:
        out += ["## Where the implementations differ", "", *[f"- {_md_escape(line)}" for line in lines], ""]
    head = "| " + " | ".join(["", *specs]) + " |"
    rule = "|" + "---|" * (len(specs) + 1)
    for component in _components(cells):
        out += [f"## {component}", "", head.replace("|  |", "| dtype |", 1), rule]
        for dtype, device, row in _overview_rows(report, component):
            where = dtype + (f" {device}" if len(meta["devices"]) > 1 else "")
            out.append("| " + " | ".join([where, *("<br>".join(_overview(c)) for c in row)]) + " |")
        out += ["", "| law | dtype | " + " | ".join(specs) + " |", "|" + "---|" * (len(specs) + 2)]
        previous = None
        for law_id, dtype, device, verdicts in matrix(report, component):
            name = law_id.split(".", 1)[1] if law_id != previous else ""
            previous = law_id
            where = dtype + (f" {device}" if len(meta["devices"]) > 1 else "")
            texts = [f"**{v.text}**" if v.css in ("f", "er") else v.text for v in verdicts]
            out.append("| " + " | ".join([name, where, *texts]) + " |")
        out.append("")
    problems = [(c, p) for c in cells for p in c.problems]
    out += ["## Failures and expected failures", ""]
    if not problems:
        out += ["None: every law that ran passed.", ""]
    for cell, (law_id, status, message) in problems:
        out += [
            f"- **{cell.impl}** `{law_id}` {cell.dtype} {cell.device}: **{status}**",
            "",
            "  ```",
            *[f"  {line}" for line in message.strip().splitlines()[:12]],
            "  ```",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1300px;color:#1d2433;
padding:0 1em}h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #d6dbe4}
.meta{color:#5b6475}code,td.c,pre{font-family:ui-monospace,"SF Mono",Menlo,Consolas,monospace}
table{border-collapse:collapse;margin:.6em 0}th,td{padding:4px 10px;border-bottom:1px solid #e3e7ee;
text-align:left;vertical-align:top}th{background:#f3f5f9;font-weight:600;position:sticky;top:0}
td.c{text-align:center;white-space:nowrap;min-width:5.5em}tr.first td{border-top:2px solid #c9d0dc}
td.ov{font-size:.9em;line-height:1.35}.law{font-weight:600}
.p0{background:#d4f2dc;color:#0f5a27}.p1{background:#eaf5c8;color:#3d5a00}.p2{background:#fdecc8;color:#7a4b00}
.ok{background:#e6f4ea;color:#0f5a27}.f{background:#f9c9c6;color:#8c1111;font-weight:700}
.er{background:#5c1111;color:#fff}.xf{background:#e8e0f6;color:#4b2b86}.xp{background:#fff3b0;color:#6b5200}
.sk{background:#f1f2f4;color:#6b7280}.na{background:#fafafa;color:#b0b5bf;font-style:italic}.none{color:#9aa1ad}
.legend span{display:inline-block;padding:1px 8px;margin:0 4px 4px 0;border-radius:3px}
ul.hl li{margin:.3em 0}details{margin:.4em 0}
pre{background:#f6f8fa;padding:.7em;overflow-x:auto;font-size:.85em;white-space:pre-wrap}
"""

_LEGEND_HTML = (
    '<p class="legend"><span class="p0">0.31</span>passed, headroom &lt; 0.5 '
    '<span class="p1">0.72</span>&lt; 0.9 <span class="p2">0.97</span>≥ 0.9 '
    '<span class="ok">ok</span>passed, exact law (no bound) <span class="f">FAIL 2.4</span>failed '
    '<span class="xf">xfail</span>expected failure <span class="sk">skip</span>skipped '
    '<span class="na">n/a</span>law not defined for the dtype</p>'
)


def render_html(report: dict[str, Any]) -> str:
    """The report as one static, self-contained HTML page (inline CSS, no scripts): implementations in columns."""
    meta, cells = report["meta"], report["cells"]
    specs = [info["spec"] for info in report["impls"]]
    e = html.escape
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>nanolm-verify — implementation comparison</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Implementation comparison</h1>",
        f'<p class="meta">Profile <code>{e(meta["profile"])}</code> · devices {e(", ".join(meta["devices"]))} · '
        f"{e(meta['date'])} · "
        + " · ".join(f"{e(k)} {e(str(v))}" for k, v in meta["versions"].items())
        + f"<br>Reproduce: <code>{e(meta['command'])}</code></p>",
        "<p>" + e(_INTRO).replace("*headroom*", "<em>headroom</em>") + "</p>",
        _LEGEND_HTML,
    ]
    if report.get("interrupted"):
        out.append(f"<p><b>Interrupted</b> ({signal.Signals(report['interrupted']).name}): partial results.</p>")
    out += ["<h2>Implementations and their declared conventions</h2>", "<table><tbody>"]
    for info in report["impls"]:
        conv = "<br>".join(f"<b>{e(c)}</b>: {e(_conventions_line(info, c))}" for c in info["provided"])
        skip = f"<br><i>{e(info['skip_reason'])}</i>" if info["skip_reason"] else ""
        out.append(
            f"<tr><td><b>{e(info['spec'])}</b><br><code>{e(info['module'])}</code></td><td>{conv}{skip}</td></tr>"
        )
    out.append("</tbody></table>")
    lines = highlights(cells, _declared(report))
    if lines:
        out += ["<h2>Where the implementations differ</h2>", '<ul class="hl">']
        out += [f"<li>{e(line)}</li>" for line in lines] + ["</ul>"]
    head = "".join(f"<th>{e(spec).replace('.', '.<wbr>')}</th>" for spec in specs)  # long module names wrap
    multi = len(meta["devices"]) > 1
    for component in _components(cells):
        out += [f"<h2>{e(component)}</h2>", f"<table><thead><tr><th>dtype</th>{head}</tr></thead><tbody>"]
        for dtype, device, row in _overview_rows(report, component):
            where = e(dtype + (f" {device}" if multi else ""))
            tds = "".join(
                f'<td class="ov" title="{e(_compact(c.worst_input) if c and c.worst_input else "")}">'
                + "<br>".join(map(e, _overview(c)))
                + "</td>"
                for c in row
            )
            out.append(f"<tr><td><b>{where}</b></td>{tds}</tr>")
        out += ["</tbody></table>", f"<table><thead><tr><th>law</th><th>dtype</th>{head}</tr></thead><tbody>"]
        previous = None
        for law_id, dtype, device, verdicts in matrix(report, component):
            first = law_id != previous
            name = f'<span class="law">{e(law_id.split(".", 1)[1])}</span>' if first else ""
            previous = law_id
            where = e(dtype + (f" {device}" if multi else ""))
            tds = "".join(f'<td class="c {v.css}" title="{e(v.title)}">{e(v.text)}</td>' for v in verdicts)
            out.append(f"<tr{' class=first' if first else ''}><td>{name}</td><td>{where}</td>{tds}</tr>")
        out.append("</tbody></table>")
    out.append("<h2>Failures and expected failures</h2>")
    problems = [(c, p) for c in cells for p in c.problems]
    if not problems:
        out.append("<p>None: every law that ran passed.</p>")
    for cell, (law_id, status, message) in problems:
        out.append(
            f"<details><summary><b>{e(cell.impl)}</b> <code>{e(law_id)}</code> {e(cell.dtype)} "
            f"{e(cell.device)}: <b>{e(status)}</b></summary><pre>{e(message.strip())}</pre></details>"
        )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


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
        counts = {
            s: sum(r["status"] == s for r in records) for s in ("passed", "failed", "error", "xfailed", "xpassed")
        }
        worst: dict[str, float | None] = {}
        for dtype in DTYPES:
            rooms = [
                _num(r.get("headroom"))
                for r in records
                if r["dtype"] == dtype and r["law_id"].endswith(_GOLDEN_LAWS) and r["status"] != "skipped"
            ]
            rooms = [h for h in rooms if h is not None]
            worst[dtype] = max(rooms) if rooms else None
        finite = [h for h in worst.values() if h is not None]
        rows.append(
            {
                "spec": info["spec"],
                "provided": info["provided"],
                "skip_reason": info["skip_reason"],
                "ran": counts["passed"] + counts["failed"] + counts["error"] + counts["xfailed"] + counts["xpassed"],
                **counts,
                "worst": worst,
                "key": (
                    counts["failed"] + counts["error"],
                    counts["xfailed"] / max(1, counts["passed"] + counts["failed"] + counts["xfailed"]),
                    max(finite) if finite else math.inf,
                ),
            }
        )
    return sorted(rows, key=lambda row: (row["ran"] == 0, row["key"]))


def render_league(report: dict[str, Any], command: str, unavailable: dict[str, str] | None = None) -> str:
    """The accuracy league as Markdown: every implementation on one page, ranked, with its findings."""
    meta = report["meta"]
    out = [
        "# Accuracy league",
        "",
        "Every shipped adapter and the reference, judged by the same laws on the same inputs "
        f"(profile `{meta['profile']}`, derandomized; devices {', '.join(meta['devices'])}; {meta['date']}; "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + ").",
        "",
        f"Regenerate: `{command}`",
        "",
        "Ranked by unexpected failures, then the share of expected failures among the law runs (a law its declared "
        "conventions cannot be judged by, or an entry of its shipped expectation file; implementations provide "
        "different components), then "
        "accuracy: the worst **headroom** of the laws against golden (`*_matches_golden`, "
        "`*_matches_stored_golden`, `*_gradients_match_golden`) — max |error| ÷ derived bound over every example, "
        "≤ 1 passes; 0.5 means the largest error used half of what the error analysis allows. Headroom above 1 "
        "in an *expected* failure is the size of a documented departure (e.g. fp32 arithmetic on fp64 inputs).",
        "",
        "| # | implementation | components | laws passed | failed | expected failures | "
        + " | ".join(f"headroom {d}" for d in DTYPES)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(DTYPES),
    ]
    rank = 0
    for row in league_rows(report):
        if not row["ran"]:
            cells = ["—", f"**{row['spec']}**", ", ".join(row["provided"]) or "—", "skipped here", "—", "—"]
            out.append("| " + " | ".join(cells + ["—"] * len(DTYPES)) + " |")
            continue
        rank += 1
        rooms = [headroom_text(h, failed=h > 1) if h is not None else "—" for h in row["worst"].values()]
        bad = row["failed"] + row["error"]
        cells = [
            str(rank),
            f"**{row['spec']}**",
            ", ".join(row["provided"]),
            f"{row['passed'] + row['xpassed']}/{row['ran']}",
            f"**{bad}**" if bad else "0",
            str(row["xfailed"]),
        ]
        out.append("| " + " | ".join(cells + rooms) + " |")
    out += ["", "## Findings", ""]
    for info in report["impls"]:
        said, reasons = findings(info["spec"])
        declared = info.get("declared") or {}
        out.append(f"### {info['spec']}")
        out.append("")
        if info["skip_reason"]:
            out.append(f"- Not run here: {_md_escape(info['skip_reason'])}")
        for component, summary in declared.items():
            out.append(f"- Declares ({component}): {_md_escape(summary)}")
        out += [f"- Finding: {_md_escape(text)}" for text in said]
        out += [f"- Expected failure: {_md_escape(text)}" for text in reasons]
        records = report["results"].get(info["spec"], [])
        declared_xfails: dict[str, int] = {}  # xfailed by a declaration (the runner's message says so)
        for r in records:
            first = (r.get("message") or "").splitlines()[:1]
            if r["status"] == "xfailed" and first and first[0].startswith("declared "):
                declared_xfails[first[0]] = declared_xfails.get(first[0], 0) + 1
        out += [
            f"- Expected failure: {_md_escape(text)} ({n} law run{'s' if n > 1 else ''})"
            for text, n in declared_xfails.items()
        ]
        failed: dict[str, list[str]] = {}
        for r in records:
            if r["status"] in ("failed", "error"):
                failed.setdefault(f"`{r['law_id']}` ({r.get('cause') or r['status']})", []).append(r["dtype"])
        if failed:
            out.append("- **Unexpected failures**: " + "; ".join(f"{k} {', '.join(v)}" for k, v in failed.items()))
        if not (said or reasons or declared_xfails or failed or info["skip_reason"]):
            out.append("- None: every law passes." if records else "- Nothing ran.")
        out.append("")
    if unavailable:
        out += ["## Not available on this machine", ""]
        out += [f"- **{spec}**: {_md_escape(reason.splitlines()[0])}" for spec, reason in unavailable.items()]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def to_json(report: dict[str, Any]) -> dict[str, Any]:
    """The compare report as JSON data (``COMPARE_SCHEMA``: ``properties/schemas/compare-report.schema.json``)."""
    interrupted = report.get("interrupted")
    return {
        "schema": COMPARE_SCHEMA,
        "meta": report["meta"],
        "interrupted": bool(interrupted),
        "interrupted_by": signal.Signals(interrupted).name if interrupted else None,
        "impls": report["impls"],
        "cells": [dataclasses.asdict(c) | {"accuracy_class": c.accuracy} for c in report["cells"]],
        "results": report["results"],
    }


def from_json(data: dict[str, Any]) -> dict[str, Any]:
    """A report (as ``run`` returns it) back from its results.json: re-render without re-running the laws."""
    names = {f.name for f in dataclasses.fields(Cell)}
    cells = [Cell(**{k: v for k, v in c.items() if k in names}) for c in data["cells"]]
    for cell in cells:
        cell.problems = [tuple(p) for p in cell.problems]
    interrupted = data.get("interrupted_by")
    return {
        "impls": data["impls"],
        "cells": cells,
        "results": data["results"],
        "meta": data["meta"],
        "interrupted": int(signal.Signals[interrupted]) if interrupted else None,
    }


def write(report: dict[str, Any], out: str | Path) -> list[Path]:
    """Write report.md, index.html and results.json into ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "report.md", out / "index.html", out / "results.json"]
    paths[0].write_text(render_markdown(report), encoding="utf-8")
    paths[1].write_text(render_html(report), encoding="utf-8")
    data = json.loads(json.dumps(to_json(report), default=str))
    paths[2].write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return paths


def exit_status(report: dict[str, Any]) -> int:
    """1 when a law failed (or the suite hit an error) for any implementation; 0 when every law passed, was
    skipped or failed as expected (xfail); 128 + the signal when the run was interrupted."""
    if report.get("interrupted"):
        return 128 + int(report["interrupted"])
    bad = any(c.counts.get("failed", 0) or c.counts.get("error", 0) for c in report["cells"])
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------- CLI


def main(args: argparse.Namespace) -> int:
    """``compare`` subcommand: 0 every law passed (or failed as expected), 1 a law failed, 2 usage error."""
    try:  # every argument, before any work
        selection = arguments.selection(args)
        options = arguments.run_options(args, selection.profile)
        if args.out is None and args.league is None:
            raise UsageError("--out DIR (the report) or --league FILE (the league table) is required")
        out = arguments.output_dir(args.out, "--out") if args.out is not None else None
        league = arguments.output_file(args.league, "--league") if args.league is not None else None
        if not args.impls and league is None:
            raise UsageError("name the implementations to compare (every adapter: --league FILE)")
        specs = [arguments.implementation(spec) for spec in args.impls or ADAPTERS]
    except (UsageError, ValueError) as exc:
        return _usage(exc)
    progress = Progress(len(selection.tasks()) * len(specs), quiet=args.quiet)
    try:  # each implementation is imported in a worker first: one that cannot be is a usage error (league: noted)
        run = session.run(specs, selection, options, on_result=progress, tolerate_unavailable=league is not None)
    except ImplementationError as exc:
        return _usage(exc)
    finally:
        progress.close()
    for note in run.notes:
        print(note, file=sys.stderr)
    report = build(run)
    paths = write(report, out) if out is not None else []
    if league is not None:
        named = [] if args.impls == [] else specs
        command = shlex.join(["nanolm-verify", "compare", "--league", args.league, *named, "--profile",
                              selection.profile, "--workers", str(options.workers)])  # fmt: skip
        league.parent.mkdir(parents=True, exist_ok=True)
        league.write_text(render_league(report, command, run.unavailable), encoding="utf-8")
        paths.append(league)
    for line in highlights(report["cells"], _declared(report)):
        print(wrap_block(line))
    if report.get("interrupted"):
        name = signal.Signals(report["interrupted"]).name
        print(f"interrupted by {name}: the report holds the {progress.done} of {run.planned} law runs finished")
    print("wrote " + ", ".join(str(p) for p in paths))
    return exit_status(report)


def _usage(exc: Exception) -> int:
    print(f"nanolm-verify compare: error: {str(exc).splitlines()[0]}", file=sys.stderr)
    return 2


EPILOG = f"""\
examples:
  nanolm-verify compare reference torch hf-llama --out cmp --profile ci
  nanolm-verify compare torch liger --device cuda --dtype bf16 --out cmp
  nanolm-verify compare torch hf-llama --only RMSNorm --workers 2 --out cmp
  nanolm-verify compare --league docs/league.md --profile ci --workers 1

adapter ids (IMPL):
{adapters_text()}

exit status:
  0    every law passed, was skipped, or failed as expected (xfail)
  1    a law failed (or the suite hit an error) for some implementation
  2    usage error: bad argument, implementation that cannot be imported
  130  interrupted (Ctrl-C), 143 (SIGTERM): the partial report is written
"""


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand to the ``nanolm-verify`` parser."""
    p = subparsers.add_parser(
        "compare",
        help="compare implementations side by side (Markdown + HTML)",
        description="Implementations side by side, as Markdown, a static HTML page and JSON:\n"
        "for each component x law x dtype, one column per implementation, each cell\n"
        "the headroom (max error divided by the derived bound, <= 1 passes).",
        epilog=EPILOG,
        formatter_class=Formatter,
    )
    p.add_argument("impls", nargs="*", metavar="IMPL", help="module, .py path or adapter id")
    p.add_argument("--out", default=None, metavar="DIR", help="write report.md, index.html, results.json here")
    p.add_argument(
        "--league",
        default=None,
        metavar="FILE",
        help="write the accuracy league (Markdown) here; without IMPL: every adapter",
    )
    arguments.add_selection(p)
    out = p.add_argument_group("output", "example: --out cmp (cmp/report.md, cmp/index.html, cmp/results.json)")
    arguments.add(out, "quiet")
    arguments.add_run_options(p)
    arguments.add_expectations(p)
    p.set_defaults(func=main)
