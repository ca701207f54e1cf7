"""HTML: compare's index.html, one static, self-contained page (inline CSS, no scripts), from the Jinja2 template
``templates/compare.html`` (every value escaped by the engine) and the results model."""

from __future__ import annotations

import signal
from typing import Any

import jinja2
import markupsafe

from properties.commands import results

__all__ = ["compare"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("properties.commands.render", "templates"),
    autoescape=True,
    trim_blocks=False,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)
_ENV.filters["wbr"] = lambda text: markupsafe.escape(text).replace(".", markupsafe.Markup(".<wbr>"))  # long names wrap


def _worst(cell: results.Cell | None) -> str:
    """A one-line description of a cell's worst input (a tooltip): scalars as key=value, long lists by length."""
    if cell is None or not cell.worst_input:
        return ""
    parts = [
        f"{k}={f'[{len(v)} values]' if isinstance(v, list | tuple) and len(v) > 4 else v}"
        for k, v in cell.worst_input.items()
    ]
    text = ", ".join(parts)
    return text if len(text) <= 90 else text[:89] + "…"


def compare(report: dict[str, Any]) -> str:
    """The comparison as one HTML page: implementations in columns."""
    interrupted = report.get("interrupted")
    return _ENV.get_template("compare.html").render(
        meta=report["meta"],
        intro=markupsafe.escape(results.COMPARE_INTRO).replace("*headroom*", markupsafe.Markup("<em>headroom</em>")),
        interrupted=signal.Signals(interrupted).name if interrupted else None,
        impls=report["impls"],
        specs=[info["spec"] for info in report["impls"]],
        multi=len(report["meta"]["devices"]) > 1,
        highlights=results.highlights(report["cells"]),
        components=results.components(report["cells"]),
        problems=results.problems(report),
        conventions_line=results.conventions_line,
        overview_lines=results.overview_lines,
        overview_rows=lambda component: results.overview_rows(report, component),
        matrix=lambda component: results.matrix(report, component),
        worst=_worst,
    )
