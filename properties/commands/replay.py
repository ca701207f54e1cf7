"""``nanolm-verify replay FILE``: re-run one failure, exactly, from its counterexample file.

``check`` writes a counterexample file (.pt) for every failed law (beside ``--json``, or under
``--artifacts DIR``). It holds the law, dtype, device, implementation and the values the law drew for the
failing example; replay runs that law once on exactly those values, in a worker process (the run session, as
``check`` runs it), and prints the verdict the way ``check`` does. The file also keeps the input and weights
passed to the implementation, for a person to load::

    import torch
    case = torch.load("RMSNorm.rmsnorm_matches_golden-fp32-cpu.pt", weights_only=False)
    case["calls"][0]["x"], case["calls"][0]["state"]["weight"]

The file is a pickle: replay and load only files you trust.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from properties.commands.helptext import DTYPE_NAMES as NAMES
from properties.commands.helptext import Formatter
from properties.running.loading import ImplementationError
from properties.running.profiles import PROFILES

__all__ = ["main", "register"]

EPILOG = """\
examples:
  nanolm-verify check impl.py --json out/r.json   (saves out/r-counterexamples/)
  nanolm-verify replay out/r-counterexamples/RMSNorm.rmsnorm_matches_golden-*.pt
  nanolm-verify replay FILE --impl mypkg.fixed_norms  does the fix hold?

exit status:
  0  the case passes now
  1  it fails again (the failure is printed as check prints it)
  2  usage error: not a counterexample file, unknown law, an implementation
     that cannot be imported, a device this machine does not have
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "replay",
        help="re-run one failure exactly, from its counterexample file",
        description="Re-run one failure exactly, from its counterexample file (.pt): check\n"
        "writes one per failed law beside --json (or under --artifacts DIR). The law\n"
        "runs once on the very values it drew, in a worker process, and the verdict is\n"
        "printed as check prints it. The file is a pickle: replay only files you trust.",
        epilog=EPILOG,
        formatter_class=Formatter,
    )
    p.add_argument("file", metavar="FILE", help="a counterexample file (.pt) written by check")
    p.add_argument(
        "--impl",
        default=None,
        metavar="SPEC",
        help="replay against this implementation instead (default: the one that failed)",
    )
    p.set_defaults(func=main)


def _usage(message: str) -> int:
    print(f"nanolm-verify replay: error: {message}", file=sys.stderr)
    return 2


def _problem(case: dict[str, Any]) -> str | None:
    """What is wrong with a counterexample file's fields, naming the field (None: nothing) — a file that cannot
    say what to replay is the user's to fix, never a failure of the implementation."""
    text = {"law_id": "a law id", "device": "a device", "implementation": "an implementation", "profile": "a profile"}
    for field, what in text.items():
        if not isinstance(case.get(field), str) or not case[field].strip():
            return f"field {field!r} is {case.get(field)!r}, expected {what} (text)"
    if case.get("dtype") not in NAMES:
        return f"field 'dtype' is {case.get('dtype')!r}, expected one of {', '.join(NAMES)}"
    if case.get("seed") is not None and (not isinstance(case["seed"], int) or isinstance(case["seed"], bool)):
        return f"field 'seed' is {case['seed']!r}, expected an integer or None"
    draws = case.get("draws")
    if draws is not None:
        pairs = isinstance(draws, (list, tuple)) and all(
            isinstance(d, (list, tuple)) and len(d) == 2 and (d[0] is None or isinstance(d[0], str)) for d in draws
        )
        if not pairs:
            return f"field 'draws' is {str(draws)[:60]!r}: expected a list of (label, value) pairs as check writes"
    return None


def main(args: argparse.Namespace) -> int:
    from properties.commands.render.text import failure_text
    from properties.running import devices as _devices
    from properties.running.runner import LAWS, Task, load_counterexample
    from properties.running.session import RunOptions, Session

    try:
        case = load_counterexample(args.file)
    except ValueError as exc:
        return _usage(str(exc))
    problem = _problem(case)
    if problem:
        return _usage(f"FILE {args.file}: {problem} (not a counterexample file written by check, or damaged)")
    try:
        _devices.resolve(case["device"])
    except ValueError as exc:
        return _usage(f"FILE {args.file}: field 'device' {exc}")
    law = LAWS.get(case["law_id"])
    if law is None:
        return _usage(f"FILE names law {case['law_id']!r}, which this version of the suite does not have")
    if law.uses_hypothesis and not case.get("draws"):
        return _usage(f"FILE holds no replayable draws ({case.get('note', 'none were recorded')})")
    spec = args.impl or case["implementation"]
    profile = case["profile"] if case["profile"] in PROFILES else "ci"
    draws = tuple(tuple(d) for d in case["draws"]) if law.uses_hypothesis else None
    task = Task(law.id, law.component, case["dtype"], case["device"], profile, case["seed"], law.summary, replay=draws)
    with Session(RunOptions.of(profile, workers=1)) as session:  # the subject runs in a worker, as in check
        try:
            info = session.subject(spec)
        except ImplementationError as exc:
            return _usage(f"--impl: {exc}" if args.impl else str(exc))
        print(f"replaying {law.id} [{task.dtype}, {task.device}]\n  implementation {info.spec}\n  file {args.file}")
        results = session.results(spec, [task])
    if session.interrupted:
        return 128 + session.interrupted
    [result] = results
    if result.status == "passed":
        print(f"passed: the case no longer fails against {info.spec}")
        return 0
    if result.status == "skipped":
        return _usage(f"cannot replay here: {result.message}")
    if result.status == "error":  # the file's draws do not fit the law (or the suite's data failed): not the subject's
        return _usage(f"FILE {args.file} cannot be replayed: {str(result.message).splitlines()[0]}")
    print(failure_text(result))
    return 1
