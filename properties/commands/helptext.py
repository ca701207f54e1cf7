"""How every ``--help`` reads: plain text at most 80 columns wide, an example per option group, the exit codes.

``Formatter`` keeps descriptions and epilogs as written (each written ≤ 80 columns) and wraps the option table
to 80 columns or the terminal, whichever is narrower. ``EXIT`` is the exit-code section shared by the commands
that run laws.
"""

from __future__ import annotations

import argparse
import shutil
from typing import Any

from properties.commands.render.text import wrap
from properties.running.loading import ADAPTERS

__all__ = ["ADAPTER_IDS", "EXIT", "Formatter", "adapters_text", "apply"]

WIDTH = 80

EXIT = """\
exit status:
  0    every law passed (skips and expected failures allowed)
  1    a law failed, or the suite hit an error, or nothing was judged
       (every law run skipped: --allow-nothing-judged accepts that)
  2    usage error: a bad argument, an implementation that cannot be imported
  130  interrupted by Ctrl-C, 143 by SIGTERM (the table and --json are
       still written, with "interrupted": true)"""

ADAPTER_IDS = tuple(ADAPTERS)


def adapters_text(indent: str = "  ") -> str:
    """The shipped adapter ids, wrapped to 80 columns."""
    return "\n".join(wrap(indent + ", ".join(ADAPTER_IDS), WIDTH - 1, hang=""))


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written; the rest wrapped to min(80, terminal) columns."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 26, width: int | None = None):
        columns = min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)
        super().__init__(prog, indent_increment, max_help_position, width or columns - 1)

    def _split_lines(self, text: str, width: int) -> list[str]:  # argparse's one hook for wrapping option help
        return wrap(" ".join(text.split()), width, hang="")  # the one wrapping helper: never "nanolm-⏎verify"


def apply(parser: argparse.ArgumentParser, default_epilog: str = "") -> None:
    """Give ``parser`` and every parser below it the Formatter (and ``default_epilog`` where none has one)."""
    parser.formatter_class = Formatter
    if default_epilog and not parser.epilog:
        parser.epilog = default_epilog
    for action in parser._actions:  # argparse keeps subparsers here: the one way to reach them
        choices: Any = getattr(action, "choices", None)
        if isinstance(action, argparse._SubParsersAction) and choices:
            for sub in choices.values():
                apply(sub, default_epilog)
