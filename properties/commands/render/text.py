"""The terminal: every line a command prints, at most 80 columns (commands to copy excepted), from the results model.

``wrap`` (render/wrapping.py) is the one text-wrapping helper; on top of it: ``check``'s
table (law × dtype cells: the status and the *headroom*, max |error| ÷ derived bound, ≤ 1 passes), its legend, the
progress line, a failure's block, and the student's view of a pitfall.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import textwrap
import time
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from golden.formats import NAMES, fmt
from properties import __version__
from properties.commands.render.wrapping import WIDTH, wrap
from properties.commands.results import (
    MARKS,
    Demo,
    counts,
    examples_needed,
    headroom_text,
    impl_verdicts,
    mark,
)
from properties.library import components as records
from properties.library.assertions import plural, relayout
from properties.library.conventions import parse_all
from properties.running import findings
from properties.running.runner import Law, LawResult
from properties.running.session import Selection, SubjectInfo

__all__ = [
    "LEGEND",
    "WIDTH",
    "Progress",
    "cell_text",
    "check_footer",
    "check_header",
    "colour",
    "compare_verdicts",
    "explain",
    "failure_text",
    "format_table",
    "law_list",
    "pitfall_demo",
    "pitfall_list",
    "pitfall_summary",
    "shell_lines",
    "summary_line",
    "wants_colour",
    "wrap",
]


LEGEND = """\
headroom      max |error| ÷ derived bound over all examples: ≤ 1 passes
  (JSON: headroom_median, the typical example's; 1/it = the slack)
cancellation  big ULP error, small headroom: the output nearly cancelled
underflow     subnormal output: few bits, so a big ULP error is allowed
cells: ok|FAIL headroom; CRASH|CONTRACT|TIMEOUT (cause of a failure);
  skip; xfail|XPASS (expected failure failed|passed); ERROR (suite bug);
  · law not defined for the dtype. Max ULP per law: the JSON report."""

_CELL = 8


def shell_lines(command: str, width: int = WIDTH, indent: str = "    ") -> list[str]:
    """A command broken between words with shell continuations (`` \\``): copy-paste safe at any width."""
    lines = textwrap.wrap(
        command, width - 2, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=False,
        break_on_hyphens=False,
    )  # fmt: skip
    return [line + " \\" for line in lines[:-1]] + lines[-1:]


# ---------------------------------------------------------------------------------------------- check


def cell_text(r: LawResult | None) -> str:
    """The ≤ 8-character cell of one result (see LEGEND)."""
    if r is None:
        return "·"
    m = mark(r.status, r.cause)
    if r.status == "passed" or m is MARKS["failed"]:
        return f"{m.text} {headroom_text(r.headroom, failed=r.status == 'failed')}".strip()
    return m.text


def format_table(results: Sequence[LawResult], width: int = WIDTH) -> str:
    """Law × dtype cells under one heading per component, one block per device; every line ≤ ``width``."""
    devices = list(dict.fromkeys(r.device for r in results))
    dtypes = [d for d in NAMES if any(r.dtype == d for r in results)] or list(NAMES)
    index = {(r.law_id, r.device, r.dtype): r for r in results}
    laws = list(dict.fromkeys((r.component, r.law_id) for r in results))
    cells = len(dtypes) * (1 + _CELL)
    longest = max([len(law_id.split(".", 1)[-1]) for _, law_id in laws] + [len("law")])
    name_w = min(longest + 1, width - cells - 2)  # one more space before the first cell where it fits
    if not results:  # an interrupted run with nothing finished: the header says what the table would hold
        return f"{'law':{name_w + 2}}" + "".join(f" {dt:>{_CELL}}" for dt in dtypes) + "\n  (no law finished)"
    lines: list[str] = []
    for device in devices:
        title = "law" if len(devices) == 1 else f"law (on {device})"
        lines.append(f"{title:{name_w + 2}}" + "".join(f" {dt:>{_CELL}}" for dt in dtypes))
        component = None
        for comp, law_id in laws:
            if comp != component:
                lines.append(comp)
                component = comp
            row = "".join(f" {cell_text(index.get((law_id, device, dt))):>{_CELL}}" for dt in dtypes)
            name = law_id.split(".", 1)[-1]
            if len(name) > name_w:  # a name longer than its column: on a line of its own, the cells below it
                lines.append(f"  {name}"[:width])
                name = ""
            lines.append(f"  {name:{name_w}}{row}")
    return "\n".join(lines)


def check_header(info: SubjectInfo, selection: Selection, planned: int) -> str:
    """What is checked, how, and what the implementation declares (printed before the laws run)."""
    seeded = "" if selection.seed is None else f", seed {selection.seed}"
    lines = [
        f"nanolm-verify {__version__}: checking {info.spec} ({', '.join(info.provided)})",
        f"  profile {selection.profile}{seeded}, devices {', '.join(selection.devices)}, {planned} law runs",
    ]
    lines += wrap(f"  skipped: {info.skip_reason}") if info.skip_reason else []
    lines += wrap(f"  kernels: {info.kernels}") if info.kernels else []
    for component, declared in parse_all(info.conventions, records.names()).items():
        if component in info.provided and declared.summary():
            lines += wrap(f"  declared {component}: {declared.summary()}")
    return "\n".join(lines)


def failure_text(r: LawResult, brief: bool = False, *, marked: bool = True) -> str:
    """The block printed for a failed / error / XPASS result (``check``, ``replay``, and the pytest plugin with
    ``marked=False``: pytest says FAILED itself): the headline "FAIL LAW [dtype, device]: what failed", its
    detail indented (the law's statement, the cause and when the search found it last), every line within 80
    columns but the commands (``reproduce:``, and ``replay:`` when a counterexample file was saved; the layout is
    ``library.assertions.layout``, the drop-in assertions' too). ``brief``: one line, the headline then the replay
    (or reproduce) command."""
    prefix = (f"{MARKS[r.status].text} " if marked else "") + f"{r.law_id} [{r.dtype}, {r.device}]: "
    message = r.message or r.status
    replay = f"replay: nanolm-verify replay {r.counterexample}" if r.counterexample else None
    if brief:
        lines = message.splitlines()
        command = replay or next((line for line in lines if line.startswith("reproduce: ")), "")
        return prefix + lines[0] + (f" — {command}" if command else "")
    extra = [f"law: {r.law}"] if r.law else []
    if r.cause:
        found = f", found after {plural(r.found_after, 'example')}" if r.found_after else ""
        extra.append(f"cause: {r.cause}{found}")
    return relayout(message, prefix, extra, width=WIDTH) + (f"\n{replay}" if replay else "")


def check_footer(
    results: Sequence[LawResult],
    *,
    planned: int,
    interrupted: int | None,
    brief: bool,
    saved: str,
    info: SubjectInfo | None = None,
) -> str:
    """After the table: each problem's block, where the counterexamples went, what was declared or skipped, what
    the failures look like, what was measured without being required, the declarations ``info``'s measurements did
    not need, an interruption — each block after a blank line ("" when there is nothing to say)."""
    blocks = [failure_text(r, brief) for r in results if r.status in ("failed", "error", "xpassed")]
    blocks += [saved] if saved else []
    excused = sorted(
        {r.measurements["declared"] for r in results if r.status == "xfailed" and "declared" in r.measurements}
    )
    if excused:  # failures no bound models under a declared convention: measured, reported, not judged
        blocks.append("\n".join(wrap("xfail by declaration: " + "; ".join(excused))))
    skipped = sorted({r.message for r in results if r.status == "skipped"})
    if skipped:
        blocks.append("\n".join(wrap("skip reasons: " + "; ".join(skipped[:6]) + (" …" if len(skipped) > 6 else ""))))
    blocks += ["\n".join(wrap(f"diagnosis: {line}")) for line in findings.diagnosis_lines(results)]
    tiers = findings.tier_line(results)
    blocks += ["\n".join(wrap(tiers))] if tiers else []
    blocks += ["\n".join(wrap(f"measured: {line}")) for line in findings.batch_lines(results)]
    blocks += ["\n".join(wrap(f"sizes: {line}")) for line in findings.left_lines(results)]
    unneeded = [d for d in findings.subject_declarations(results, info) if d.warning] if info is not None else []
    blocks += ["\n".join(wrap(f"warning: {d.text()}")) for d in unneeded]
    if interrupted:
        blocks.append(f"interrupted by {signal.Signals(interrupted).name}: {len(results)} of {planned} results")
    return "\n".join("\n" + block for block in blocks)


def summary_line(results: Sequence[LawResult], seconds: float) -> str:
    n = counts(results)
    expected = "".join(f", {n[s]} {s}" for s in ("xfailed", "xpassed") if n[s])
    return (
        f"{n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped, {n['error']} errors{expected} — "
        f"{len(results)} results in {seconds:.1f} s"
    )


# The HTML report's cell classes (results.Verdict.css, templates/compare.html) as terminal colours: the same class,
# the same meaning (green passed with room, or on a law that attains its bound; yellow-green < 0.9 of the bound;
# amber ≥ 0.9; red failed; white on red a suite error; magenta an expected failure; dim skipped).
ANSI = {
    "ok": "32", "pb": "32", "p0": "32", "p1": "92", "p2": "33", "f": "1;31", "er": "1;97;41", "xf": "35",
    "xp": "1;33", "sk": "2", "na": "2", "none": "2",
}  # fmt: skip


def colour(text: str, css: str, on: bool) -> str:
    """``text`` in the terminal colour of the HTML class ``css`` (``on``: the stream is a terminal, NO_COLOR unset)."""
    return f"\x1b[{ANSI[css]}m{text}\x1b[0m" if on and css in ANSI else text


def wants_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never where $NO_COLOR is set or TERM is dumb (https://no-color.org)."""
    return (
        bool(getattr(stream, "isatty", lambda: False)())
        and not os.environ.get("NO_COLOR")
        and (os.environ.get("TERM") != "dumb")
    )


def compare_verdicts(report: dict[str, Any], *, colours: bool = False, width: int = WIDTH) -> list[str]:
    """compare's first lines: one verdict per implementation — PASS / FAIL / ERROR / UNAVAILABLE coloured as its
    most alarming cell is in the HTML report, the laws passed, and that cell (law, dtype, headroom)."""
    lines = []
    multi = len(report["meta"]["devices"]) > 1
    for v in impl_verdicts(report):
        detail = f"could not be imported: {v.reason}" if v.word == "UNAVAILABLE" else v.laws_text
        if v.worst is not None and v.worst[3].headroom is not None:
            law_id, dtype, device, cell = v.worst
            where = f"{law_id.split('.', 1)[-1]} {dtype}{' ' + device if multi else ''}"
            if cell.css == "f":
                detail += f"; worst: {where}, failed by {headroom_text(cell.headroom, failed=True)}"
            else:
                detail += f"; max headroom {headroom_text(cell.headroom)}{'*' if v.attained else ''} ({where})"
        head = f"{v.word:<4} {v.spec}: "
        body = wrap(head + detail, width - 1, hang="     ")
        body[0] = colour(v.word, v.css, colours) + body[0][len(v.word) :]
        lines += body
    if any(v.attained for v in impl_verdicts(report)):
        lines.append("* laws whose bound a correct result reaches by design (near 1) aside")
    return lines


def law_list(laws: Iterable[Law]) -> str:
    """``check --list``: each law's id, dtypes and statement."""
    lines = []
    for law in laws:
        dts = ",".join(fmt(d).name for d in law.dtypes)
        head = f"{law.id}  [{dts}]"
        lines += [head] if len(head) <= WIDTH else [law.id, f"  [{dts}]"]
        lines += wrap("    " + " ".join(law.doc.split()), WIDTH, hang="")
    return "\n".join(lines)


class Progress:
    """``k/N`` finished, elapsed and estimated time left: one ``\\r`` line on a terminal, else one plain line per
    finished law (CI logs). Writes to ``stream`` (stderr by default); silent when ``quiet``."""

    def __init__(self, total: int, *, stream: TextIO | None = None, quiet: bool = False, what: str = "laws") -> None:
        self.total, self.done, self.what, self.quiet = total, 0, what, quiet
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self._shown = False

    def _times(self) -> str:
        elapsed = time.monotonic() - self.start
        if not self.done or self.done >= self.total:
            return f"{elapsed:.0f} s"
        left = elapsed / self.done * (self.total - self.done)
        return f"{elapsed:.0f} s, ~{left:.0f} s left"

    def __call__(self, r: LawResult, label: str = "") -> None:
        self.done += 1
        if self.quiet:
            return
        head = f"{self.done}/{self.total} {self.what}"
        if self.tty:
            line = (
                f"  {head} ({self._times()}) {label + ' ' if label else ''}{r.law_id} {r.dtype} {r.device}: {r.status}"
            )
            print("\r" + line[: WIDTH - 1].ljust(WIDTH - 1), end="", file=self.stream, flush=True)
            self._shown = True
            return
        verdict = cell_text(r) if r.status in ("passed", "failed") else r.status
        tail = f" {r.dtype} {r.device}: {verdict} ({r.duration:.1f} s)"
        room = WIDTH - len(f"[{head}] ") - len(tail)
        name = f"{label + ' ' if label else ''}{r.law_id}"
        if len(name) > room:  # one line per law, within the width: the law's name without its component …
            name = f"{label + ' ' if label else ''}{r.law_id.split('.', 1)[-1]}"
        if len(name) > room:  # … and shortened as the table shortens it
            name = name[: max(1, room - 1)] + "…"
        print(f"[{head}] {name}{tail}", file=self.stream, flush=True)

    def skip(self, n: int) -> None:
        """``n`` planned law runs will not run (an implementation that cannot be imported): N shrinks."""
        self.total = max(self.done, self.total - n)

    def close(self) -> None:
        """Clear the ``\\r`` line (terminal only)."""
        if self._shown:
            print("\r" + " " * (WIDTH - 1) + "\r", end="", file=self.stream, flush=True)
            self._shown = False


# ---------------------------------------------------------------------------------------------- pitfalls


def _message_lines(message: str, width: int) -> list[str]:
    """A law's failure message for a student: each line wrapped on its own, the reproduction command broken with
    shell continuations, Hypothesis's @reproduce_failure blob left out."""
    lines = message.strip().splitlines()
    blob = next((i for i, ln in enumerate(lines) if re.search(r"reproduce_failure|You can reproduce this", ln)), None)
    out = []
    for line in lines[:blob]:
        if line.startswith("reproduce: "):
            out += ["  reproduce:", *shell_lines(line.removeprefix("reproduce: "), width)]
        else:
            out += wrap("  " + line.rstrip(), width, hang="    ", keep=())
    while out and not out[-1].strip():
        out.pop()
    return out


def _title(pitfall: Any) -> str:
    return (pitfall.docstring.strip() or pitfall.name).splitlines()[0].removeprefix("Pitfall:").strip()


def explain(pitfall: Any) -> str:
    """The pitfall's docstring (mistake, why, evidence, the catching law) without its title line."""
    doc = pitfall.docstring.strip()
    return (doc.split("\n", 1)[1].strip() if "\n" in doc else doc).replace("``", "")


def pitfall_demo(demo: Demo, index: int, total: int, width: int = WIDTH) -> list[str]:
    """The student-facing text of one demonstration, at most ``width`` columns per line."""
    p, r = demo.pitfall, demo.result
    lines = ["═" * width]
    lines += wrap(f"[{index}/{total}] {demo.name}: {_title(p)}", width, hang="    ")
    lines += wrap(f"wrong implementation: {p.module} ({p.component}; {p.kind})", width, hang="    ")
    lines += wrap(f"law: {p.law} · {r.dtype} · {r.device} · profile {r.profile}", width, hang="    ")
    lines += ["─" * width, *wrap(explain(p), width, hang="", reflow=True), ""]
    lines += [*wrap(f"The law: {r.law}", width), ""]
    if demo.caught:
        needed = examples_needed(r)
        found = f"found after {plural(int(needed), 'example')}" if needed.isdigit() else needed
        lines.append(f"Counterexample (shrunk; {found}):")
        worst = ", ".join(f"{k}={v}" for k, v in (r.worst_input or {}).items()) or "(no input description recorded)"
        lines += wrap("  " + worst, width)
        lines += ["What the law saw (golden, actual, bound):", *_message_lines(r.message, width), ""]
        lines += wrap(f"✔ CAUGHT: {p.law} failed on {demo.name} ({r.dtype}), as it should.", width)
    elif p.pending:
        lines += wrap(
            f"… NOT CAUGHT YET (a known gap): {p.law} returned {demo.outcome} after "
            f"{plural(r.examples, 'example')} in the {r.profile} profile. Why: {p.pending}.",
            width,
        )
    else:
        lines += wrap(
            f"✘ NOT CAUGHT: {p.law} returned {demo.outcome} on {demo.name} after {plural(r.examples, 'example')} — the "
            "catalogue expects the law's own assertion to fail (cause law).",
            width,
        )
        lines += _message_lines(r.message, width) if r.message else []
    if demo.reference is not None:
        ref = demo.reference
        lines += wrap(
            f"{'✔' if ref.status == 'passed' else '✘'} reference nanolm_core: {ref.status} on the same law "
            f"({plural(ref.examples, 'example')}).",
            width,
        )
        lines += _message_lines(ref.message, width) if ref.status != "passed" and ref.message else []
    return lines


def pitfall_summary(demos: Sequence[Demo], width: int = WIDTH) -> list[str]:
    """The closing table: each pitfall, the law that catches it, and the examples it took."""
    rows = []
    for d in demos:
        if d.caught:
            needed = examples_needed(d.result)
            status = f"all {d.result.examples}" if needed.startswith("exhaustive") else needed
        else:
            status = "pending" if d.pitfall.pending else f"NOT caught: {d.outcome}"
        if d.reference is not None and d.reference.status != "passed":
            status += f"; reference {d.reference.status}"
        sign = "✔" if d.ok and d.caught else "…" if d.ok else "✘"
        rows.append((sign, d.name, d.pitfall.law.split(".", 1)[1], status))
    name_w, stat_w = max(len(r[1]) for r in rows), max(len(r[3]) for r in rows)
    law_w = max(8, min(max(len(r[2]) for r in rows), width - name_w - stat_w - 5))
    lines = [
        "═" * width,
        "Summary: each pitfall, the law that catches it, and the examples it took",
        f"  {'pitfall':<{name_w}} {'law':<{law_w}} examples",
    ]
    for sign, name, law, status in rows:
        law = law if len(law) <= law_w else law[: law_w - 1] + "…"
        lines.append(f"{sign} {name:<{name_w}} {law:<{law_w}} {status}")
    caught, pending = sum(d.caught for d in demos), sum(d.ok and not d.caught for d in demos)
    tail = f", {pending} pending (a known gap, see above)" if pending else ""
    return [
        *lines,
        f"{caught} of {len(demos)} pitfalls caught{tail}.",
        "('all N': an exhaustive law checked N values at once.)",
    ]


def pitfall_list(pitfalls: dict[str, Any], width: int = WIDTH) -> str:
    """``pitfalls --list``: one line each, the name and its title."""
    name_w = max(map(len, pitfalls))
    lines = [f"{name:<{name_w}}  {p.title}" for name, p in pitfalls.items()]
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in lines)
