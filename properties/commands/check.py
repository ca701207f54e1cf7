"""``nanolm-verify check [IMPL]``: run the laws against an implementation, print the verdict, write the JSON report.

Exit status: 0 every law passed (skips allowed), 1 a law failed (or the suite hit an error), 2 usage or
import error. The runner behind it is ``properties.running.runner.run_check`` (re-exported here).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from golden.formats import fmt
from properties import __version__
from properties.commands import arguments, baseline
from properties.commands.helptext import EXIT, Formatter, adapters_text
from properties.commands.report import CHECK_SCHEMA, LEGEND, Progress, format_table, wrap, wrap_block
from properties.library.conventions import parse_all
from properties.library.subject import COMPONENTS
from properties.running import findings, profiles, session
from properties.running.loading import ImplementationError
from properties.running.runner import LawResult, UsageError, run_check, select_laws
from properties.running.session import RunOptions, Selection, SubjectInfo

__all__ = [
    "SCHEMA",
    "exit_status",
    "failure_text",
    "format_table",
    "register",
    "report",
    "run_check",
    "write_counterexamples",
    "write_report",
]

SCHEMA = CHECK_SCHEMA


# ---------------------------------------------------------------------------------------------- the report


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _device_name(device: str) -> str:
    if device == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return platform.processor() or platform.machine()


def footer(results: Sequence[LawResult], info: SubjectInfo) -> list[str]:
    """The footer sections of the verdict: what the failures look like (diagnosis), what was measured without
    being required (batch invariance), and the declarations the measurements did not need (warnings)."""
    lines = [f"diagnosis: {line}" for line in findings.diagnosis_lines(results)]
    lines += [f"measured: {line}" for line in findings.batch_lines(results)]
    unneeded = [d for d in _declarations(results, info) if d.warning]
    lines += [f"warning: {d.text()}" for d in unneeded]
    return lines


def _declarations(results: Sequence[LawResult], info: SubjectInfo) -> list[findings.Declaration]:
    try:
        parsed = parse_all(info.conventions, COMPONENTS)
    except ValueError:  # (a module whose declaration cannot be read never gets this far)
        return []
    return findings.declarations(results, {c: parsed[c] for c in info.provided if c in parsed})


def report(
    results: Sequence[LawResult],
    impl: SubjectInfo,
    *,
    profile: str,
    seed: int | None,
    devices: Sequence[str],
    duration: float | None = None,
    interrupted: int | None = None,
    planned: int | None = None,
) -> dict[str, Any]:
    """The versioned JSON report (key ``schema``; its JSON Schema: ``properties/schemas/check-report.schema.json``).

    ``interrupted``: the signal that stopped the run (the results are those finished by then); ``planned``: the
    number of law runs the selection asked for."""
    prof = profiles.get(profile)
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    return {
        "schema": SCHEMA,
        "suite": {"name": "nanolm-verify", "version": __version__},
        "implementation": {
            "spec": impl.spec,
            "module": impl.module,
            "file": impl.file,
            "provided": list(impl.provided),
            "skip_reason": impl.skip_reason,
            "conventions": impl.conventions,
            "import_effects": list(impl.import_effects),
            "declarations": [d.to_json() for d in _declarations(results, impl)],
        },
        "platform": {
            "python": platform.python_version(),
            "os": platform.platform(),
            "machine": platform.machine(),
            "libraries": {
                name: _version(name)
                for name in ("torch", "numpy", "mpmath", "hypothesis", "transformers", "liger-kernel")
            },
        },
        "target": {
            "devices": list(devices),
            "device_names": {d: _device_name(d) for d in devices},
            "cuda_available": torch.cuda.is_available(),
            "torch_threads": torch.get_num_threads(),
        },
        "profile": {
            "name": prof.name,
            "max_examples": prof.max_examples,
            "derandomize": prof.derandomize,
            "slow_tier": prof.slow,
        },
        "seed": seed,
        "interrupted": bool(interrupted),
        "interrupted_by": signal.Signals(interrupted).name if interrupted else None,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "duration": round(duration, 3) if duration is not None else None,
        "summary": {
            "passed": counts["passed"],
            "failed": counts["failed"],
            "skipped": counts["skipped"],
            "errors": counts["error"],
            "xfailed": counts["xfailed"],
            "xpassed": counts["xpassed"],
            "total": len(results),
            "planned": len(results) if planned is None else planned,
        },
        "results": [r.to_json() for r in results],
    }


def write_report(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- the table


STATUSES = ("passed", "failed", "skipped", "error", "xfailed", "xpassed")
_MARK = {"passed": "ok", "failed": "FAIL", "skipped": "skip", "error": "ERROR", "xfailed": "xfail", "xpassed": "XPASS"}


def _summary_line(results: Sequence[LawResult], seconds: float) -> str:
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    expected = "".join(f", {counts[s]} {s}" for s in ("xfailed", "xpassed") if counts[s])
    return (
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped, "
        f"{counts['error']} errors{expected} — {len(results)} results in {seconds:.1f} s"
    )


def exit_status(results: Sequence[LawResult]) -> int:
    """0 all passed (skips and expected failures allowed), 1 a law failed or the suite hit an error."""
    return 1 if any(r.status in ("failed", "error") for r in results) else 0


# ---------------------------------------------------------------------------------------------- the command


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

adapter ids (IMPL):
{adapters_text()}

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
    what.add_argument("--list", action="store_true", help="list the laws (id, dtypes, statement) and exit")
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


def _list(only: Sequence[str] | None) -> int:
    """``--list``: the selected laws (id, dtypes, statement)."""
    try:
        laws = select_laws(only)
    except UsageError as exc:
        return _usage(exc)
    for law in laws:
        dts = ",".join(fmt(d).name for d in law.dtypes)
        head = f"{law.id}  [{dts}]"
        print(head if len(head) <= 80 else f"{law.id}\n  [{dts}]")
        print("\n".join("    " + line.strip() for line in wrap(law.doc, width=76)))
    return 0


def main(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args.only)
    try:  # every argument, before any work
        spec = arguments.implementation(args.impl)
        selection = arguments.selection(args)
        options = arguments.run_options(args, selection.profile)
        json_path = arguments.output_file(args.json_path, "--json")
        artifacts = arguments.output_dir(args.artifacts, "--artifacts") if args.artifacts is not None else None
        if args.baseline is not None:
            if Path(args.baseline).exists():
                arguments.input_json(args.baseline, "--baseline", ("records",), baseline.SCHEMA)
            else:
                arguments.output_file(args.baseline, "--baseline")
    except (UsageError, ValueError) as exc:
        return _usage(exc)
    return execute(
        spec,
        selection,
        options,
        quiet=args.quiet,
        json_path=json_path,
        artifacts=artifacts,
        baseline_path=args.baseline,
    )


def execute(
    spec: str,
    selection: Selection,
    options: RunOptions,
    *,
    quiet: bool = False,
    json_path: Path | None = None,
    artifacts: Path | None = None,
    baseline_path: str | None = None,
) -> int:
    """Run ``selection`` against ``spec`` in the session, print the verdict, write the report → the exit status."""
    planned = len(selection.tasks())

    def header(info: SubjectInfo) -> None:
        print(f"nanolm-verify {__version__}: checking {info.spec} ({', '.join(info.provided)})")
        seeded = "" if selection.seed is None else f", seed {selection.seed}"
        print(f"  profile {selection.profile}{seeded}, devices {', '.join(selection.devices)}, {planned} law runs")
        if info.skip_reason:
            print(wrap_block(f"  skipped: {info.skip_reason}"))
        for component, declared in parse_all(info.conventions, COMPONENTS).items():
            if component in info.provided and declared.summary():
                print(wrap_block(f"  declared {component}: {declared.summary()}"))

    progress = Progress(planned, quiet=quiet)
    try:
        run = session.run([spec], selection, options, on_subject=header, on_result=progress)
    except ImplementationError as exc:
        return _usage(exc)
    finally:
        progress.close()
    info = run.subjects[0].info if run.subjects else SubjectInfo.unknown(spec)
    results, interrupted, seconds = run.results, run.interrupted, run.duration
    for note in run.notes:
        print(note, file=sys.stderr)
    print(format_table(results))
    print(LEGEND)
    folder = artifacts or (json_path.parent / f"{json_path.stem}-counterexamples" if json_path else None)
    saved = write_counterexamples(results, folder) if folder else 0
    problems = [r for r in results if r.status in ("failed", "error", "xpassed")]
    for r in problems:
        print("\n" + failure_text(r, brief=quiet))
    unsaved = [r for r in results if r.replay_data and not r.counterexample]
    if unsaved:
        print(f"\n{len(unsaved)} counterexample(s) not saved: pass --artifacts DIR or --json PATH to replay them")
    elif saved:
        print(f"\n{saved} counterexample(s) saved in {folder}")
    excused = sorted(
        {r.measurements["declared"] for r in results if r.status == "xfailed" and "declared" in r.measurements}
    )
    if excused:  # failures no bound models under a declared convention: measured, reported, not judged
        print("\n" + wrap_block("xfail by declaration: " + "; ".join(excused)))
    skipped = sorted({r.message for r in results if r.status == "skipped"})
    if skipped:
        print("\n" + wrap_block("skip reasons: " + "; ".join(skipped[:6]) + (" …" if len(skipped) > 6 else "")))
    for line in footer(results, info):  # diagnoses, measured properties, declarations the run did not need
        print("\n" + wrap_block(line))
    if interrupted:
        print(f"\ninterrupted by {signal.Signals(interrupted).name}: {len(results)} of {planned} results")
    print("\n" + _summary_line(results, seconds))
    if json_path:
        doc = report(
            results, info, profile=selection.profile, seed=selection.seed, devices=selection.devices,
            duration=seconds, interrupted=interrupted, planned=planned,
        )  # fmt: skip
        print(f"report: {write_report(doc, json_path)}")
    if interrupted:
        return 128 + interrupted
    if not results:
        print("nothing was checked: no law ran (see the selection above)", file=sys.stderr)
        return 1
    status = exit_status(results)
    if baseline_path:
        status = max(status, _apply_baseline(results, Path(baseline_path), info, selection.profile, selection.seed))
    return status


def failure_text(r: LawResult, brief: bool = False) -> str:
    """The block printed for a failed / error / XPASS result (``check`` and ``replay``)."""
    msg = r.message if not brief else r.message.splitlines()[0]
    found = f"found after {r.found_after} example(s)" if r.found_after else ""
    cause = ", ".join(part for part in (f"cause: {r.cause}" if r.cause else "", found) if part)
    lines = [f"{_MARK[r.status]} {r.law_id} [{r.dtype}, {r.device}]" + (f" {cause}" if cause else ""), f"  {r.law}"]
    lines += ["  " + line for line in msg.splitlines()]
    if r.counterexample:
        lines.append(f"replay: nanolm-verify replay {r.counterexample}")
    return wrap_block("\n".join(lines))


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


def _apply_baseline(results: Sequence[LawResult], path: Path, impl: SubjectInfo, profile: str, seed: int | None) -> int:
    """Record the run's per-law error statistics to ``path`` (absent), or report what grew since (present)."""
    if not path.exists():
        baseline.record(results, path, impl=impl.spec, profile=profile, seed=seed)
        print(f"baseline recorded: {path}")
        return 0
    lines = baseline.compare(results, path, profile=profile)
    regressions = [line for line in lines if not line.startswith("note:")]
    print(f"\nbaseline {path}: " + (f"{len(regressions)} law(s) got worse" if regressions else "no law got worse"))
    print("\n".join("  " + line for line in lines))
    return 1 if regressions else 0
