"""What ``check`` and ``compare`` print and write: the 80-column table, its legend, the progress line, the
schema ids and the shipped JSON Schemas (``properties/schemas/``).

A cell shows the status and the *headroom*: max |error| ÷ derived bound over every example of the law (≤ 1
passes). Headroom is the number to watch — 0.31 means the worst error used 31 % of what the analysis allows;
the max ULP error stays in the JSON report (it misleads near a cancellation or an underflow, see LEGEND).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Sequence
from importlib import resources
from typing import Any, TextIO

from golden.formats import NAMES
from properties.running.runner import LawResult

__all__ = [
    "CHECK_SCHEMA",
    "COMPARE_SCHEMA",
    "LEGEND",
    "WIDTH",
    "Progress",
    "cell_text",
    "format_table",
    "headroom_text",
    "schema",
]

WIDTH = 80  # every line of the table, the legend and --list fits a terminal of 80 columns
CHECK_SCHEMA = "nanolm-verify/check-report/2"
COMPARE_SCHEMA = "nanolm-verify/compare-report/2"
_SCHEMA_FILES = {CHECK_SCHEMA: "check-report.schema.json", COMPARE_SCHEMA: "compare-report.schema.json"}

LEGEND = """\
headroom      max |error| ÷ derived bound over all examples: ≤ 1 passes
  (JSON: headroom_median, the typical example's; 1/it = the slack)
cancellation  big ULP error, small headroom: the output nearly cancelled
underflow     subnormal output: few bits, so a big ULP error is allowed
cells: ok|FAIL headroom; CRASH|CONTRACT|TIMEOUT (cause of a failure);
  skip; xfail|XPASS (expected failure failed|passed); ERROR (suite bug);
  · law not defined for the dtype. Max ULP per law: the JSON report."""

_CELL = 8
_CAUSE = {"crash": "CRASH", "contract": "CONTRACT", "timeout": "TIMEOUT"}
_MARK = {"skipped": "skip", "error": "ERROR", "xfailed": "xfail", "xpassed": "XPASS"}


def schema(doc_schema: str) -> dict[str, Any]:
    """The shipped JSON Schema (a dict) of the report kind ``doc_schema`` (CHECK_SCHEMA or COMPARE_SCHEMA)."""
    if doc_schema not in _SCHEMA_FILES:
        raise ValueError(f"unknown report schema {doc_schema!r}; known: {', '.join(_SCHEMA_FILES)}")
    name = _SCHEMA_FILES[doc_schema]
    return json.loads(resources.files("properties").joinpath("schemas", name).read_text(encoding="utf-8"))


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


def cell_text(r: LawResult | None) -> str:
    """The ≤ 8-character cell of one result (see LEGEND)."""
    if r is None:
        return "·"
    if r.status == "passed":
        return f"ok {headroom_text(r.headroom)}".strip()
    if r.status == "failed":
        if r.cause in _CAUSE:
            return _CAUSE[r.cause]
        return f"FAIL {headroom_text(r.headroom, failed=True)}".strip()
    return _MARK[r.status]


def format_table(results: Sequence[LawResult], width: int = WIDTH) -> str:
    """Law × dtype cells under one heading per component, one block per device; every line ≤ ``width``."""
    devices = list(dict.fromkeys(r.device for r in results))
    dtypes = [d for d in NAMES if any(r.dtype == d for r in results)] or list(NAMES)
    index = {(r.law_id, r.device, r.dtype): r for r in results}
    laws = list(dict.fromkeys((r.component, r.law_id) for r in results))
    cells = len(dtypes) * (1 + _CELL)
    longest = max([len(law_id.split(".", 1)[-1]) for _, law_id in laws] + [len("law")])
    name_w = min(longest + 1, width - cells - 2)  # one more space before the first cell where it fits
    lines: list[str] = []
    if not results:  # an interrupted run with nothing finished: the header says what the table would hold
        return f"{'law':{name_w + 2}}" + "".join(f" {dt:>{_CELL}}" for dt in dtypes) + "\n  (no law finished)"
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


def wrap_block(text: str, width: int = WIDTH, keep: tuple[str, ...] = ("reproduce:", "replay:")) -> str:
    """Each line of ``text`` wrapped to ``width`` at its own indentation (+2 on continuations); lines that
    start with one of ``keep`` (commands to copy) are left whole."""
    out = []
    for line in text.splitlines():
        body = line.lstrip()
        lead = line[: len(line) - len(body)]
        if len(line) <= width or body.startswith(keep):
            out.append(line)
            continue
        parts = wrap(body, width - len(lead), indent="  ")
        out += [lead + part for part in parts]
    return "\n".join(out)


def wrap(text: str, width: int = WIDTH, indent: str = "    ") -> list[str]:
    """``text`` split into lines of at most ``width`` columns (continuations indented)."""
    out, line = [], ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if len(candidate) > width and line:
            out.append(line)
            line = indent + word
        else:
            line = candidate
    return [*out, line] if line else out


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
        what = f"{label + ' ' if label else ''}{r.law_id} {r.dtype} {r.device}"
        if self.tty:
            line = f"  {head} ({self._times()}) {what}: {r.status}"
            print("\r" + line[: WIDTH - 1].ljust(WIDTH - 1), end="", file=self.stream, flush=True)
            self._shown = True
        else:
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
