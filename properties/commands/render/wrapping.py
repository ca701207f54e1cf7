"""``wrap``, the one text-wrapping helper (``textwrap`` underneath): each line at its own indentation, a hanging
indent on continuations, commands to copy left whole, never a word broken at a hyphen. Nothing heavy is imported
here: the command line's help texts are wrapped with it before torch or the law library is imported.
"""

from __future__ import annotations

import textwrap

__all__ = ["KEEP", "WIDTH", "wrap"]

WIDTH = 80  # every line of the table, the legend and --list fits a terminal of 80 columns
KEEP = ("reproduce:", "replay:")  # lines that are commands to copy: never broken


def wrap(
    text: str, width: int = WIDTH, *, hang: str = "  ", keep: tuple[str, ...] = KEEP, reflow: bool = False
) -> list[str]:
    """``text`` in lines of at most ``width`` columns: each line wrapped at its own indentation, continuations
    indented by ``hang`` more; lines starting with ``keep`` (commands) left whole. ``reflow``: consecutive lines of
    a paragraph are joined first (a docstring); lines indented by 4 or more (formulas) are never joined."""
    lines = text.splitlines()
    if reflow:
        lines = _paragraphs(lines)
    out = []
    for line in lines:
        body = line.strip()
        lead = line[: len(line) - len(line.lstrip())]
        if not body or body.startswith(keep):
            out.append(line.rstrip())
            continue
        out += textwrap.wrap(
            body, width, initial_indent=lead, subsequent_indent=lead + hang, break_on_hyphens=False
        ) or [lead]
    return out


def _paragraphs(lines: list[str]) -> list[str]:
    """Join each paragraph's lines into one; blank lines and lines indented by 4 or more stay as they are."""
    out: list[str] = []
    for line in lines:
        verbatim = line.startswith("    ") or not line.strip()
        if not verbatim and out and out[-1].strip() and not out[-1].startswith("    "):
            out[-1] = f"{out[-1]} {line.strip()}"
        else:
            out.append(line.rstrip() if verbatim else line.strip())
    return out
