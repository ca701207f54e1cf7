"""``nanolm-verify compare IMPL... --out DIR``: implementations side by side — parse, run the session, render.

For every implementation × component × dtype × device the report gives: laws passed (of those run; expected
failures counted apart), the max and p99 ULP error against golden over every law that measures it, the accuracy
class of that max, batch invariance (the batch-invariance laws' verdicts) and the worst input. Beside the numbers:
each implementation's declared conventions, the comparisons whose accuracy class differs, and every failure with
its message (the model: ``properties.commands.results``; the formats: ``properties.commands.render``).

Files written to DIR: ``report.md``, ``index.html`` (self-contained, no scripts) and ``results.json`` (every law
record, expectations applied). ``--league FILE``: every adapter ranked on one page. Exit status: 0 every law passed
(or failed as expected), 1 a law failed for some implementation (the report is written either way), 2 usage or
import error (an implementation is imported in a worker first, never in this process).
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from properties.commands import arguments
from properties.commands.helptext import ADAPTER_IDS, Formatter
from properties.running.loading import ImplementationError, UsageError, adapters

__all__ = ["REPORT_FILES", "main", "register", "write"]

REPORT_FILES = ("report.md", "index.html", "results.json")  # what --out DIR receives


def write(report: dict[str, Any], out: str | Path) -> list[Path]:
    """Write report.md, index.html and results.json into ``out``; returns the paths."""
    from properties.commands.render import html, json, markdown

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in REPORT_FILES[:2]]
    paths[0].write_text(markdown.compare(report), encoding="utf-8")
    paths[1].write_text(html.compare(report), encoding="utf-8")
    return [*paths, json.write(json.compare_report(report), out / REPORT_FILES[2])]


def main(args: argparse.Namespace) -> int:
    """``compare`` subcommand: 0 every law passed (or failed as expected), 1 a law failed, 2 usage error."""
    from properties.commands import results
    from properties.commands.render import markdown, text
    from properties.running import session

    try:  # every argument, before any work
        selection = arguments.selection(args)
        options = arguments.run_options(args, selection.profile)
        if args.out is None and args.league is None:
            raise UsageError("--out DIR (the report) or --league FILE (the league table) is required")
        out = arguments.output_dir(args.out, "--out") if args.out is not None else None
        league = arguments.output_file(args.league, "--league") if args.league is not None else None
        if not args.impls and league is None:
            raise UsageError("name the implementations to compare (every adapter: --league FILE)")
        specs = [arguments.implementation(spec) for spec in args.impls or adapters()]
        written = {f"--out {name}": out / name for name in REPORT_FILES} if out is not None else {}
        inputs = {**arguments.run_inputs(None, selection), "an implementation": [
            path for spec in specs for path in arguments.implementation_files(spec)
        ]}  # fmt: skip
        arguments.distinct({"--out": out, **written, "--league": league}, inputs)
    except (UsageError, ValueError) as exc:
        return _usage(exc)
    progress = text.Progress(len(selection.tasks()) * len(specs), quiet=args.quiet)
    try:  # each implementation is imported in a worker first: one that cannot be is a usage error (league: noted)
        run = session.run(specs, selection, options, on_result=progress, tolerate_unavailable=league is not None)
    except ImplementationError as exc:
        return _usage(exc)
    finally:
        progress.close()
    for note in run.notes:
        print(note, file=sys.stderr)
    report = results.compare(run)
    paths = write(report, out) if out is not None else []
    if league is not None:
        words = ["compare", "--league", args.league, *args.impls, "--profile", selection.profile]
        command = shlex.join(["nanolm-verify", *words, "--workers", str(options.workers)])
        league.parent.mkdir(parents=True, exist_ok=True)
        league.write_text(markdown.league(report, command), encoding="utf-8")
        paths.append(league)
    print("\n".join(text.compare_verdicts(report, colours=text.wants_colour(sys.stdout))))
    for line in results.highlights(report["cells"]):
        print("\n".join(text.wrap(line)))
    if run.interrupted:
        name = signal.Signals(run.interrupted).name
        print(f"interrupted by {name}: the report holds the {progress.done} of {run.planned} law runs finished")
    print("wrote " + ", ".join(str(p) for p in paths))
    nothing = None if run.interrupted else run.nothing_judged()
    if nothing and not args.allow_nothing_judged:
        print(f"{nothing}; exit 1 (--allow-nothing-judged accepts such a run)", file=sys.stderr)
        return 1
    return results.exit_status_of(report)


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
{ADAPTER_IDS}

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
    arguments.add_selection(p)
    out = p.add_argument_group("output", "example: --out cmp (cmp/report.md, cmp/index.html, cmp/results.json)")
    out.add_argument("--out", default=None, metavar="DIR", help="write report.md, index.html, results.json here")
    out.add_argument(
        "--league", default=None, metavar="FILE",
        help="write the accuracy league (Markdown) here; without IMPL: every adapter",
    )  # fmt: skip
    arguments.add(out, "quiet")
    arguments.add_run_options(p)
    arguments.add_expectations(p)
    p.set_defaults(func=main)
