"""``nanolm-verify check [IMPL]``: run the laws against an implementation, print the verdict, write the JSON report.

Parse, run the session (``properties.running.session``: the implementation runs in worker processes), render
(``properties.commands.render``). Exit status: 0 every law passed (skips allowed), 1 a law failed (or the suite hit
an error, or nothing was judged), 2 usage or import error, 128 + the signal when interrupted (the table and --json
are still written).
``run_check`` (the same laws in this process, for tests and the pytest plugin) is re-exported here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from properties.commands import arguments
from properties.commands.helptext import ADAPTER_IDS, EXIT, Formatter
from properties.running.loading import ImplementationError, UsageError

if TYPE_CHECKING:  # the parser is declared without them (--help imports no torch); the run imports them
    from properties.commands.results import exit_status
    from properties.running.runner import LawResult, run_check
    from properties.running.session import RunOptions, Selection, SubjectInfo

__all__ = ["execute", "exit_status", "main", "register", "run_check", "write_counterexamples"]


def __getattr__(name: str) -> Any:  # re-exported, imported when first asked for
    if name == "exit_status":
        from properties.commands.results import exit_status

        return exit_status
    if name == "run_check":
        from properties.running.runner import run_check

        return run_check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DESCRIPTION = """\
Run the laws against an implementation (a module, a .py file or an adapter id),
print the verdict as a table of law x dtype cells (the headroom: max error
divided by the derived bound, <= 1 passes), and write the JSON report."""

EPILOG = f"""\
examples:
  nanolm-verify check                           the reference, default profile
  nanolm-verify check mypkg.norms --profile ci --json out/report.json
  nanolm-verify check hf-llama --only RMSNorm --dtype bf16
  nanolm-verify check --list                    the laws, and exit
  nanolm-verify check --list --json -           the laws and adapter ids as JSON
  nanolm-verify check --list --matrix           component x axis: laws per cell

adapter ids (IMPL):
{ADAPTER_IDS}

{EXIT}
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "check",
        help="run the laws against an implementation",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=Formatter,
    )
    p.add_argument(
        "impl", nargs="?", default=None, metavar="IMPL",
        help="module, .py path or adapter id (default: $NANOLM_IMPL, else nanolm_core)",
    )  # fmt: skip
    what = arguments.add_selection(p)
    what.add_argument(
        "--list", action="store_true",
        help="list the laws (id, dtypes, statement) and exit; with --json PATH (- for standard output): the laws "
        "and the adapter ids as JSON",
    )  # fmt: skip
    what.add_argument(
        "--matrix", action="store_true",
        help="with --list: the component x axis matrix (the laws covering each cell, or why none), and exit",
    )  # fmt: skip
    what.add_argument(
        "--markdown", metavar="PATH", default=None,
        help="with --list --matrix: write the matrix as Markdown to PATH (docs/matrix.md)",
    )  # fmt: skip
    out = p.add_argument_group("output", "example: --json out/r.json (failures: out/r-counterexamples/*.pt)")
    arguments.add(out, "json_path")
    out.add_argument(
        "--artifacts", default=None, metavar="DIR",
        help="write each failure's counterexample (.pt, for nanolm-verify replay) here (default: "
        "PATH-counterexamples/ beside --json; none without either)",
    )  # fmt: skip
    arguments.add(out, "quiet")
    out.add_argument(
        "--baseline", metavar="FILE", default=None,
        help="record per-law max/p99 ULP error and headroom to FILE if it does not exist, else report (and "
        "exit 1 on) every law whose error grew since; delete FILE to re-record",
    )  # fmt: skip
    arguments.add_run_options(p)
    arguments.add_expectations(p)
    p.set_defaults(func=main)


def _usage(exc: Exception) -> int:
    print(f"nanolm-verify check: error: {exc}", file=sys.stderr)
    return 2


def _matrix(args: argparse.Namespace) -> int:
    from properties.library import matrix  # the law library: imported only to print it

    if args.markdown is None:
        print(matrix.text())
        return 0
    path = arguments.output_file(args.markdown, "--markdown")
    arguments.distinct({"--markdown": path}, arguments.run_inputs(args.impl))
    Path(path).write_text(matrix.markdown(), encoding="utf-8")
    print(f"wrote {path}")
    return 0


def main(args: argparse.Namespace) -> int:
    from properties.commands import baseline
    from properties.commands.render import text
    from properties.running.runner import select_laws

    if (args.matrix and not args.list) or (args.markdown is not None and not args.matrix):
        return _usage(UsageError("--matrix goes with --list, --markdown with --list --matrix"))
    if args.list and args.matrix:
        try:
            return _matrix(args)
        except UsageError as exc:
            return _usage(exc)
    if args.list:
        try:
            laws = select_laws(args.only)
            listing = arguments.output_file(args.json_path, "--json") if args.json_path not in (None, "-") else None
            arguments.distinct({"--json": listing}, arguments.run_inputs(args.impl))
        except UsageError as exc:
            return _usage(exc)
        if args.json_path is None:
            print(text.law_list(laws))
            return 0
        from properties.commands.render import json

        doc = json.law_list(laws)
        print(json.dumps(doc)) if listing is None else print(f"wrote {json.write(doc, listing)}")
        return 0
    if args.json_path == "-":
        return _usage(UsageError("--json -: standard output holds the table; give a file (stdout only with --list)"))
    try:  # every argument, before any work
        spec = arguments.implementation(args.impl)
        selection = arguments.selection(args)
        options = arguments.run_options(args, selection.profile)
        json_path = arguments.output_file(args.json_path, "--json")
        artifacts = arguments.output_dir(args.artifacts, "--artifacts") if args.artifacts is not None else None
        if args.baseline is not None and Path(args.baseline).exists():
            arguments.input_json(args.baseline, "--baseline", ("records",), baseline.SCHEMA)
            try:  # every record's fields (a text where a number belongs: refused, naming it)
                baseline.load(args.baseline)
            except ValueError as exc:
                raise UsageError(f"--baseline {exc}") from None
        elif args.baseline is not None:
            arguments.output_file(args.baseline, "--baseline")
        new_baseline = Path(args.baseline) if args.baseline is not None and not Path(args.baseline).exists() else None
        arguments.distinct(
            {"--json": json_path, "--baseline": new_baseline},
            arguments.run_inputs(spec, selection, args.baseline),
        )
    except (UsageError, ValueError) as exc:
        return _usage(exc)
    folder = artifacts or (json_path.parent / f"{json_path.stem}-counterexamples" if json_path else None)
    return execute(spec, selection, options, quiet=args.quiet, json_path=json_path, artifacts=folder,
                   baseline_path=args.baseline, allow_nothing_judged=args.allow_nothing_judged)  # fmt: skip


def execute(
    spec: str,
    selection: Selection,
    options: RunOptions,
    *,
    quiet: bool = False,
    json_path: Path | None = None,
    artifacts: Path | None = None,
    baseline_path: str | None = None,
    allow_nothing_judged: bool = False,
) -> int:
    """Run ``selection`` against ``spec`` in the session, print the verdict, write the report → the exit status."""
    from properties.commands.render import json, text
    from properties.commands.results import exit_status
    from properties.library.assertions import plural
    from properties.running import session
    from properties.running.session import SubjectInfo

    planned = len(selection.tasks())
    progress = text.Progress(planned, quiet=quiet)
    try:
        run = session.run(
            [spec], selection, options, on_subject=lambda info: print(text.check_header(info, selection, planned)),
            on_result=progress,
        )  # fmt: skip
    except ImplementationError as exc:
        return _usage(exc)
    finally:
        progress.close()
    info = run.subjects[0].info if run.subjects else SubjectInfo.unknown(spec)
    results = run.results
    for note in run.notes:
        print(note, file=sys.stderr)
    print(text.format_table(results))
    print(text.LEGEND)
    saved = write_counterexamples(results, artifacts) if artifacts else 0
    unsaved = sum(1 for r in results if r.replay_data and not r.counterexample)
    note = f"{plural(saved, 'counterexample')} saved in {artifacts}" if saved else ""
    note = (
        f"{plural(unsaved, 'counterexample')} not saved: pass --artifacts DIR or --json PATH to replay them"
        if unsaved
        else note
    )
    footer = text.check_footer(
        results, planned=planned, interrupted=run.interrupted, brief=quiet, saved=note, info=info
    )  # fmt: skip
    print(footer) if footer else None
    print("\n" + text.summary_line(results, run.duration))
    if run.interrupted:
        status = 128 + run.interrupted
    elif (nothing := run.nothing_judged()) and not allow_nothing_judged:
        print(f"{nothing}; exit 1 (--allow-nothing-judged accepts such a run)", file=sys.stderr)
        status = 1
    else:
        status = exit_status(results)
        if baseline_path:
            status = max(status, _apply_baseline(results, Path(baseline_path), info, selection))
    if json_path:  # last: the report records the exit status
        report = json.check_report(run, info, exit_status=status, threads=options.threads)
        print(f"report: {json.write(report, json_path)}")
    return status


def counterexample_name(r: LawResult) -> str:
    """``RMSNorm.rmsnorm_matches_golden-fp32-cpu.pt`` (no characters a shell would expand)."""
    return f"{r.law_id}-{r.dtype}-{r.device.replace(':', '_')}.pt"


def write_counterexamples(results: Sequence[LawResult], folder: Path) -> int:
    """Write each failure's counterexample file into ``folder``; set ``counterexample`` to its path → count."""
    count = 0
    for r in results:
        if r.replay_data and r.status == "failed":
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / counterexample_name(r)
            path.write_bytes(r.replay_data)
            r.counterexample = str(path)
            count += 1
    return count


def _apply_baseline(results: Sequence[LawResult], path: Path, impl: SubjectInfo, selection: Selection) -> int:
    """Record the run's per-law error statistics to ``path`` (absent), or report what grew since (present)."""
    from properties.commands import baseline

    if not path.exists():
        baseline.record(results, path, impl=impl.spec, profile=selection.profile, seed=selection.seed)
        print(f"baseline recorded: {path}")
        return 0
    lines = baseline.compare(results, path, profile=selection.profile)
    regressions = [line for line in lines if not line.startswith("note:")]
    print(f"\nbaseline {path}: " + (f"{len(regressions)} law(s) got worse" if regressions else "no law got worse"))
    print("\n".join("  " + line for line in lines))
    return 1 if regressions else 0
