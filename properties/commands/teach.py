"""``nanolm-verify pitfalls [NAME ...]``: the pitfall gallery, demonstrated for a student — parse, run the session,
render.

For each pitfall in ``properties.gallery.PITFALLS`` (the one catalogue of wrong implementations) it runs the law
designated to catch it against the wrong implementation, in the run session's worker processes, and prints,
wrapped to the terminal (80 columns by default): what the mistake is and why people make it, the law, the shrunk
counterexample with golden vs actual vs bound (the law's failure message), and a line saying whether it was
caught. Caught means the law's own assertion failed (``cause == "law"``): a crash, a contract failure or a timeout
of the wrong implementation is reported as NOT caught. ``--reference`` also runs each law against the reference
(``nanolm_core``), which must pass it. ``--markdown PATH`` runs the kill matrix (every entry against every law of
its component) and writes docs/gallery.md. Exit status 0 when every pitfall was caught as expected (or is a
declared known gap) and the reference passed, 1 otherwise, 2 for an unknown name or argument.

``demonstrate_pitfall`` is the one verdict the CLI, docs/gallery.md and the kill-matrix test share.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from properties.commands import arguments
from properties.commands.helptext import Formatter
from properties.running.loading import DEFAULT_IMPL, UsageError

if TYPE_CHECKING:  # imported where they are used: declaring the parser (--help) imports no torch
    from properties.commands.results import Demo, KillMatrix
    from properties.gallery import Pitfall
    from properties.running.runner import LawResult, Task
    from properties.running.session import RunOptions

__all__ = ["demonstrate", "demonstrate_all", "demonstrate_pitfall", "kill_matrix", "register", "run_tasks"]

DEFAULT_WIDTH = 80


def _task(law: Any, dtype: Any, device: str, profile: str, seed: int | None, impl: str = DEFAULT_IMPL) -> Task:
    from golden.formats import fmt
    from properties.running.runner import Task

    return Task(law.id, law.component, fmt(dtype).name, device, profile, seed, law.summary, impl=impl)


def run_tasks(tasks: list[Task], options: RunOptions | None = None) -> list[LawResult]:
    """Run tasks that each name their implementation: in the run session's worker processes (``options``; one
    pool, each worker loads an implementation of the catalogue the first time a task names it), or — ``options``
    None, for tests — in this process."""
    from properties.running.loading import load
    from properties.running.session import Session

    if options is None:
        return [t.run(load(t.impl or DEFAULT_IMPL)) for t in tasks]
    with Session(options) as session:
        results = session.results(DEFAULT_IMPL, tasks)
    if session.interrupted:
        raise KeyboardInterrupt  # the run was interrupted: no partial gallery
    return results


def demonstrate_all(
    pitfalls: list[Pitfall],
    *,
    profile: str = "ci",
    seed: int | None = None,
    device: str = "cpu",
    reference: bool = False,
    options: RunOptions | None = None,
) -> list[Demo]:
    """Run each pitfall's law against its wrong implementation (and optionally against the reference)."""
    from properties.commands.results import Demo
    from properties.running.runner import LAWS

    tasks = []
    for p in pitfalls:
        law = LAWS[p.law]
        tasks.append(_task(law, p.torch_dtype, device, profile, seed, p.module))
        if reference:
            tasks.append(_task(law, p.torch_dtype, device, profile, seed))
    results = iter(run_tasks(tasks, options))
    return [Demo(p, next(results), next(results) if reference else None) for p in pitfalls]


def demonstrate_pitfall(
    pitfall: Pitfall, *, profile: str = "ci", seed: int | None = None, device: str = "cpu", reference: bool = False
) -> Demo:
    """Run ``pitfall.law`` against its wrong implementation (and optionally against the reference), in process."""
    return demonstrate_all([pitfall], profile=profile, seed=seed, device=device, reference=reference)[0]


def demonstrate(
    name: str, *, profile: str = "ci", seed: int | None = None, device: str = "cpu", reference: bool = False
) -> Demo:
    """Demonstrate the catalogue's pitfall ``name`` (see ``demonstrate_pitfall``)."""
    from properties.gallery import PITFALLS

    return demonstrate_pitfall(PITFALLS[name], profile=profile, seed=seed, device=device, reference=reference)


# ---------------------------------------------------------------------------------------------- kill matrix


def _dtype_for(law: Any, preferred: Any) -> Any:
    from golden.formats import fmt

    wanted = fmt(preferred).dtype
    return wanted if wanted in law.dtypes else law.dtypes[0]


def kill_matrix(profile: str = "ci", device: str = "cpu", options: RunOptions | None = None) -> KillMatrix:
    """Run the catalogue: each entry's designated law (and the reference on it), then every other law of its
    component in the entry's dtype where the law applies (else the law's first dtype); ``options``: see
    ``run_tasks``."""
    from golden.formats import fmt
    from properties.commands.results import Demo, KillMatrix
    from properties.gallery import PITFALLS
    from properties.running.runner import LAWS

    keys: dict[tuple[str, str, str], int] = {}  # (implementation, law id, dtype) → task index
    tasks: list[Task] = []

    def want(impl: str, law: Any, dtype: Any) -> tuple[str, str, str]:
        key = (impl, law.id, fmt(dtype).name)
        if key not in keys:
            keys[key] = len(tasks)
            tasks.append(_task(law, dtype, device, profile, None, impl))
        return key

    plan: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
    for name, p in PITFALLS.items():
        if p.missing:  # written in a package not installed here (the Triton entries without triton)
            continue
        designated = want(p.module, LAWS[p.law], p.torch_dtype)
        on_ref = want(DEFAULT_IMPL, LAWS[p.law], p.torch_dtype)
        row = {
            law_id: want(p.module, law, _dtype_for(law, p.dtype))
            for law_id, law in LAWS.items()
            if law.component == p.component
        }
        plan[name] = (designated, on_ref, row)
    ref_keys = {law_id: want(DEFAULT_IMPL, law, _dtype_for(law, "fp32")) for law_id, law in LAWS.items()}
    results = run_tasks(tasks, options)
    got = {key: results[i] for key, i in keys.items()}
    demos = {name: Demo(PITFALLS[name], got[d], got[r]) for name, (d, r, _) in plan.items()}
    rows = {name: {law_id: got[k] for law_id, k in row.items()} for name, (_, _, row) in plan.items()}
    return KillMatrix(profile, demos, rows, {law_id: got[k] for law_id, k in ref_keys.items()})


# ---------------------------------------------------------------------------------------------- CLI


def _run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from properties.commands.render import markdown, text
    from properties.gallery import PITFALLS

    out = out or sys.stdout
    width = min(400, max(40, args.width))
    if args.list:
        print(text.pitfall_list(PITFALLS, width), file=out)
        return 0
    try:
        selection = arguments.selection(args, laws=False)
        options = arguments.run_options(args, selection.profile)
        if not 40 <= args.width <= 400:
            raise UsageError(f"--width {args.width}: expected 40 … 400 columns")
        if args.markdown is not None:
            written = arguments.output_file(args.markdown, "--markdown")
            arguments.distinct({"--markdown": written}, arguments.run_inputs(None, selection))
    except UsageError as exc:
        print(f"nanolm-verify pitfalls: error: {exc}", file=sys.stderr)
        return 2
    device = selection.devices[0]  # the catalogue is demonstrated on one device: the first selected (auto: cpu)
    if args.markdown:
        km = kill_matrix(selection.profile, device, options)
        Path(args.markdown).write_text(markdown.gallery(km), encoding="utf-8")
        print(f"wrote {args.markdown}", file=out)
        return 0 if km.ok else 1
    names = args.names or list(PITFALLS)
    unknown = [n for n in names if n not in PITFALLS]
    if unknown:
        print(
            f"nanolm-verify pitfalls: unknown pitfall {', '.join(unknown)}; "
            f"`nanolm-verify pitfalls --list` shows the {len(PITFALLS)} known ones",
            file=sys.stderr,
        )
        return 2
    pitfalls = [PITFALLS[n] for n in names]
    demos = demonstrate_all(
        pitfalls, profile=selection.profile, seed=selection.seed, device=device, reference=args.reference,
        options=options,
    )  # fmt: skip
    for i, demo in enumerate(demos, 1):
        print("\n".join(text.pitfall_demo(demo, i, len(names), width)), file=out, flush=True)
    print("\n".join(text.pitfall_summary(demos, width)), file=out)
    return 0 if all(d.ok for d in demos) else 1


def register(subparsers: Any) -> None:
    """Add ``pitfalls [NAME ...]`` to the ``nanolm-verify`` parser."""
    parser = subparsers.add_parser(
        "pitfalls",
        help="demonstrate the gallery of wrong implementations and the laws that catch them",
        description="For each pitfall: the mistake, why people make it, the law that catches it,\n"
        "the shrunk counterexample (golden vs actual vs bound) and whether it was caught.",
        epilog="examples:\n"
        "  nanolm-verify pitfalls --list\n"
        "  nanolm-verify pitfalls eps_outside_sqrt --profile ci\n"
        "  nanolm-verify pitfalls --markdown docs/gallery.md --profile ci\n\n"
        "exit status:\n"
        "  0  every pitfall was caught as expected\n"
        "  1  a pitfall was not caught (or the reference failed, with --reference)\n"
        "  2  usage error: an unknown pitfall or argument",
        formatter_class=Formatter,
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="pitfalls to show (default: all; see --list)")
    parser.add_argument("--list", action="store_true", help="list the pitfalls and exit")
    what = arguments.add_selection(parser, laws=False)
    what.add_argument("--reference", action="store_true", help="also run each law on nanolm_core (must pass)")
    out = parser.add_argument_group("output", "example: --markdown docs/gallery.md --width 100")
    out.add_argument("--markdown", metavar="PATH", help="run the full kill matrix and write it as Markdown")
    out.add_argument("--width", type=int, default=DEFAULT_WIDTH, help="wrap the text to this many columns (80)")
    arguments.add_run_options(parser, database=False)  # the catalogue's verdicts are reproducible as shipped
    parser.set_defaults(func=_run)
