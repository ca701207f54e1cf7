"""How every ``--help`` reads: plain text at most 80 columns wide, an example per option group, the exit codes.

``Formatter`` keeps descriptions and epilogs as written (each written ≤ 80 columns) and wraps the option table
to 80 columns or the terminal, whichever is narrower. ``EXIT`` is the exit-code section shared by the commands
that run laws. Nothing heavy (torch, Hypothesis, the law library) is imported here or by any command's parser
declaration: ``nanolm-verify --help`` prints in well under half a second (bench/cli_start.py).
"""

from __future__ import annotations

import argparse
import shutil
from typing import Any

from properties.commands.render.wrapping import wrap
from properties.running.loading import adapters

__all__ = ["ADAPTER_IDS", "DTYPE_NAMES", "EXIT", "Formatter", "adapters_text", "apply"]

WIDTH = 80

# The dtype names the help texts list, without importing torch to read them (golden.formats.NAMES is the fact: its
# table holds torch dtypes; tests/commands/test_help.py checks this equals it). Components: components.names().
DTYPE_NAMES = ("fp64", "fp32", "fp16", "bf16")

EXIT = """\
exit status:
  0    every law passed (skips and expected failures allowed)
  1    a law failed, or the suite hit an error, or nothing was judged
       (every law run skipped: --allow-nothing-judged accepts that)
  2    usage error: a bad argument, an implementation that cannot be imported
  130  interrupted by Ctrl-C, 143 by SIGTERM (the table and --json are
       still written, with "interrupted": true)"""


ADAPTER_IDS = "@adapter-ids@"  # in a description or epilog: the adapter ids, looked up when the help is printed


def adapters_text(indent: str = "  ") -> str:
    """The adapter ids (the installed entry points: the shipped ones and any a library registers), wrapped to 80
    columns."""
    return "\n".join(wrap(indent + ", ".join(adapters()), WIDTH - 1, hang=""))


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written; the rest wrapped to min(80, terminal) columns."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 26, width: int | None = None):
        columns = min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)
        super().__init__(prog, indent_increment, max_help_position, width or columns - 1)

    def _format_text(self, text: str) -> str:  # argparse's hook for descriptions and epilogs, at print time
        if ADAPTER_IDS in text:  # the installed entry points are read only when a help that lists them is printed
            text = text.replace(ADAPTER_IDS, adapters_text())
        return super()._format_text(text)

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
