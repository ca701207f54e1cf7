"""The ``nanolm-verify`` command: one parser, subcommands contributed by the modules that own them.

Each module in SUBCOMMANDS defines ``register(subparsers)`` adding its parser with ``set_defaults(func=...)``;
``func(args) -> int`` is the exit status (0 passed, 1 a check failed, 2 usage or import error).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import signal
import sys

from properties import __version__

SUBCOMMANDS = (
    "properties.commands.check",  # check IMPL: run the laws, print the verdict, write the JSON report
    "properties.commands.compare",  # compare IMPL...: side-by-side Markdown + HTML
    "properties.commands.replay",  # replay FILE: re-run one failure exactly, from its counterexample file
    "properties.commands.fuzz",  # fuzz IMPL: a coverage-guided campaign (HypoFuzz), then a report
    "properties.commands.teach",  # pitfalls [NAME]: the gallery, explained
    "properties.commands.plots",  # plot ...: the docs' figures
    "golden.cli",  # golden verify|regen|bench
)


DESCRIPTION = """\
Property-based numerical verification of RMSNorm, SwiGLU, a pre-norm Block
and the residual add + norm (AddRMSNorm): laws checked against an exact
(golden) oracle and derived error bounds."""

EPILOG = """\
examples:
  nanolm-verify check mypkg.norms --profile ci --json out/report.json
  nanolm-verify replay out/report-counterexamples/FILE.pt
  nanolm-verify compare reference torch hf-llama --out cmp
  nanolm-verify COMMAND --help                      each command's options

adapter ids (IMPL):
{adapters}

{exit}
"""

_GENERIC_EXIT = """\
exit status:
  0  success
  1  a check failed
  2  usage error"""


# Commands that run the subject in worker processes: their fork server starts before the parser's imports
# (torch, the laws), which it then makes in parallel on another core (properties.running.processes).
WORKER_COMMANDS = frozenset({"check", "compare", "pitfalls", "replay", "fuzz"})


def build_parser() -> argparse.ArgumentParser:
    from properties.commands.helptext import ADAPTER_IDS, EXIT, Formatter, apply

    epilog = EPILOG.format(adapters=ADAPTER_IDS, exit=EXIT)
    parser = argparse.ArgumentParser(
        prog="nanolm-verify", description=DESCRIPTION, epilog=epilog, formatter_class=Formatter
    )
    parser.add_argument("--version", action="version", version=f"nanolm-verify {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if not name.startswith(exc.name or "?"):  # a real missing dependency inside an existing module
                raise
            continue
        module.register(subparsers)
    apply(parser, _GENERIC_EXIT)  # ≤ 80 columns everywhere; an exit section where a command has none
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if words and words[0] in WORKER_COMMANDS and not {"-h", "--help", "--list"} & set(words):
        from properties.running import processes  # multiprocessing: only for the commands that run workers

        processes.warm_up()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args))


def run() -> None:
    """The console script: main(), then exit without the interpreter's final garbage collection over torch's
    objects (≈ 0.7 s of every command on the CI machines; gc.freeze leaves them to the operating system).
    Ctrl-C or SIGTERM at any phase ends it with 128 + the signal (130, 143): during a run the session returns the
    results so far; before one the command stops at once; after one its output is written first."""
    from properties.running import stops  # (light: signal only)

    stops.stop_on_signals()
    try:
        status = main()
    except (stops.Stopped, KeyboardInterrupt) as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"nanolm-verify: interrupted by {signal.Signals(signum).name} before the run began", file=sys.stderr)
        status = 128 + signum
    pending = stops.pending_stop()
    if pending:
        print(f"nanolm-verify: interrupted by {signal.Signals(pending).name} (the output above is complete)",
              file=sys.stderr)  # fmt: skip
        status = 128 + pending
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    run()
