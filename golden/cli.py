"""``nanolm-verify golden verify|regen|bench``: the corpus tools and the fast-path benchmark.

Every action checks its arguments before any work: a bad one exits with status 2 and one line naming it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from golden.layout import DATA_DIR, FAMILIES, MANIFEST  # the rest when an action runs: --help imports no torch

RECHECK_INPUTS = 1 << 20  # recipe inputs up to this many values are regenerated and checked by a plain verify


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (``PROG: error: argument --dim: …``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return v


def _count(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 0, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 0, got {text!r}")
    return v


def _corpus_dir(text: str) -> Path:
    p = Path(text)
    if not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such directory")
    return p


def _output_dir(text: str) -> Path:
    """A directory regen may write: existing and writable, or creatable (its nearest existing parent writable) —
    checked before minutes of computing, not after."""
    p = Path(text)
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give a directory")
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: exists and is not a directory")
    existing = next((q for q in (p, *p.parents) if q.exists()), Path("."))
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: {existing} is not writable")
    return p


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "golden",
        help="golden corpus: verify | regen | bench",
        description="Tools for the stored golden corpus and the golden engine.",
    )
    p.error = lambda message: _OneLineParser.error(p, message)  # type: ignore[method-assign]
    p.set_defaults(func=lambda args: _usage(p))
    sub = p.add_subparsers(dest="golden_command", metavar="ACTION", parser_class=_OneLineParser)
    v = sub.add_parser("verify", help="check the corpus checksums and recompute a sample of cases")
    v.add_argument("--data", type=_corpus_dir, default=DATA_DIR, help="corpus directory (default: packaged)")
    v.add_argument("--full", action="store_true", help="recompute every case and regenerate every recipe (slow)")
    v.add_argument("--sample", type=_count, default=3, help="cheapest cases recomputed per family (default 3)")
    v.add_argument(
        "--unpinned", action="store_true",
        help="a corpus being built (regenerated, not yet pinned in golden/corpus.py): skip the pin and the check "
        "that every case of the recipe is there",
    )  # fmt: skip
    v.set_defaults(func=cmd_verify)
    r = sub.add_parser("regen", help="regenerate the corpus (refuses to overwrite without --force)")
    r.add_argument("--data", type=_output_dir, default=DATA_DIR, help="corpus directory to write")
    r.add_argument("--force", action="store_true", help="overwrite existing corpus files")
    r.add_argument("--family", choices=FAMILIES, action="append", help="only this family (repeatable)")
    r.set_defaults(func=cmd_regen)
    b = sub.add_parser("bench", help="time one golden SwiGLU row at D=4096, F=11008 vs naive mpmath and numpy")
    b.add_argument("--dim", type=_positive_int, default=4096, help="D (default 4096)")
    b.add_argument("--hidden", type=_positive_int, default=11008, help="F (default 11008)")
    b.add_argument("--slice", type=_positive_int, default=48, help="hidden units by naive mpmath (extrapolated)")
    b.set_defaults(func=cmd_bench)


def _usage(p: argparse.ArgumentParser) -> int:
    print(f"{p.prog}: error: name an action: verify, regen or bench", file=sys.stderr)
    return 2


def _generator() -> ModuleType:
    """``golden/data/generate.py``, the generator beside the data (imported only for regen: it is not API)."""
    return importlib.import_module("golden.data.generate")


def cmd_verify(args: argparse.Namespace) -> int:
    from golden import corpus
    from golden.formats import FORMATS
    from golden.framework import GoldenError

    t0 = time.perf_counter()
    try:
        man = corpus.check_manifest(args.data, pinned=not args.unpinned)
        pin = "not checked (--unpinned)" if args.unpinned else "the pinned one"
        print(f"golden verify: {MANIFEST}: {pin}; lists {', '.join(man['files'])}")
        worst_all = 0.0
        n_cases = n_recomputed = 0
        for fam in FAMILIES:
            header, cases = corpus.load_family(fam, args.data, man, pinned=not args.unpinned)
            n_cases += len(cases)
            skipped = 0
            for case in cases:  # every golden; every input but the largest recipes (regenerated by --full)
                _ = case.golden
                if args.full or case.cost <= RECHECK_INPUTS:
                    _ = case.inputs
                else:
                    skipped += 1
            pick = cases if args.full else sorted(cases, key=lambda c: c.cost)[: args.sample]
            worst = 0.0
            for case in pick:  # small cases by the independent plain-mpmath evaluator, large ones by the fast path
                fresh = corpus.recompute(case, method="mpmath" if case.cost <= 4000 else "auto")
                rel = corpus.compare(case, fresh)
                same = all(bool((case.golden.rounded(f.dtype) == fresh.rounded(f.dtype)).all()) for f in FORMATS)
                if rel > 2.0**-100 or not same:
                    print(
                        f"golden verify: FAILED {case.file}: case {case.id!r}: stored and recomputed goldens differ "
                        f"(relative {rel:.3g} > 2^-100, or a different correct rounding)",
                        file=sys.stderr,
                    )
                    return 1
                worst = max(worst, rel)
            n_recomputed += len(pick)
            worst_all = max(worst_all, worst)
            prov = header.get("provenance", {})
            unchecked = f" ({skipped} with recipe inputs of > {RECHECK_INPUTS} values: --full)" if skipped else ""
            print(
                f"golden verify: {fam}.json: {len(cases)} cases, file and per-case sha256 ok{unchecked}; recomputed "
                f"{len(pick)} (max relative difference {worst:.2g}); mpmath {prov.get('mpmath')}, "
                f"generator {header.get('generator_version')}"
            )
    except corpus.CorpusError as exc:
        print(f"golden verify: REFUSED: {exc}", file=sys.stderr)
        return 1
    except GoldenError as exc:
        print(f"golden verify: FAILED: the engine could not recompute a case: {exc}", file=sys.stderr)
        return 1
    print(
        f"golden verify: OK — {n_cases} cases, {n_recomputed} recomputed, max relative difference "
        f"{worst_all:.2g} ≤ 2^-100, {time.perf_counter() - t0:.1f} s"
    )
    return 0


def cmd_regen(args: argparse.Namespace) -> int:

    families = tuple(dict.fromkeys(args.family or FAMILIES))
    paths = {f: args.data / f"{f}.json" for f in FAMILIES}
    existing = [str(paths[f]) for f in families if paths[f].exists()]
    if existing and not args.force:
        print(f"golden regen: refusing to overwrite {', '.join(existing)}; pass --force", file=sys.stderr)
        return 2
    absent = [str(paths[f]) for f in FAMILIES if f not in families and not paths[f].exists()]
    if absent:
        print(
            f"golden regen: --family: {', '.join(absent)} would be missing from the manifest; regenerate every "
            "family there (no --family) or copy the others in first",
            file=sys.stderr,
        )
        return 2
    gen = _generator()
    with tempfile.TemporaryDirectory() as tmp:  # write aside, then move: an interrupted regen leaves no half file
        tmpdir = Path(tmp)
        for f in FAMILIES:
            if f not in families:
                shutil.copy(paths[f], tmpdir / paths[f].name)
        print(f"golden regen: generating {', '.join(families)} (generator {gen.GENERATOR_VERSION})")
        gen.generate(tmpdir, families)
        args.data.mkdir(parents=True, exist_ok=True)
        for f in families:
            shutil.move(str(tmpdir / paths[f].name), paths[f])
        shutil.move(str(tmpdir / MANIFEST), args.data / MANIFEST)
    from golden import corpus

    digest = corpus.file_sha256(args.data / MANIFEST)
    same = "the pinned one" if digest == corpus.MANIFEST_SHA256 else "NOT the pinned one"
    print(f"golden regen: wrote {args.data}; its {MANIFEST} sha256 {digest} is {same}")
    if digest != corpus.MANIFEST_SHA256:
        print("  to judge by it, review the change and set golden/corpus.py MANIFEST_SHA256 to that value")
    return 0


BENCH_VALUES = 1 << 28  # the most weight values (F × D) a bench allocates: 2 GiB in float64, per matrix


def cmd_bench(args: argparse.Namespace) -> int:
    problem = None
    if args.slice > args.hidden:
        problem = f"argument --slice: {args.slice} hidden units, more than --hidden {args.hidden}"
    elif args.dim * args.hidden > BENCH_VALUES:
        problem = f"argument --dim/--hidden: {args.dim} × {args.hidden} weights, more than {BENCH_VALUES} (2 GiB each)"
    if problem:
        print(f"nanolm-verify golden bench: error: {problem}", file=sys.stderr)
        return 2
    from golden import bench

    return bench.run(args.dim, args.hidden, args.slice)
