"""``nanolm-verify golden verify|regen|bench``: the corpus tools and the fast-path benchmark."""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from golden import corpus


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "golden",
        help="golden corpus: verify | regen | bench",
        description="Tools for the stored golden corpus and the golden engine.",
    )
    sub = p.add_subparsers(dest="golden_command", metavar="ACTION")
    v = sub.add_parser("verify", help="check the corpus checksums and recompute a sample of cases")
    v.add_argument("--data", type=Path, default=corpus.DATA_DIR, help="corpus directory (default: the packaged one)")
    v.add_argument("--full", action="store_true", help="recompute every case (incl. the Llama-7B row: slower)")
    v.add_argument("--sample", type=int, default=3, help="cheapest cases recomputed per family (default 3)")
    v.set_defaults(func=cmd_verify)
    r = sub.add_parser("regen", help="regenerate the corpus (refuses to overwrite without --force)")
    r.add_argument("--data", type=Path, default=corpus.DATA_DIR)
    r.add_argument("--force", action="store_true", help="overwrite existing corpus files")
    r.add_argument("--family", choices=corpus.FAMILIES, action="append", help="only this family (repeatable)")
    r.set_defaults(func=cmd_regen)
    b = sub.add_parser("bench", help="time one golden SwiGLU row at D=4096, F=11008 vs naive mpmath and numpy")
    b.add_argument("--dim", type=int, default=4096)
    b.add_argument("--hidden", type=int, default=11008)
    b.add_argument("--slice", type=int, default=48, help="hidden units evaluated by naive mpmath (extrapolated)")
    b.set_defaults(func=cmd_bench)


def _generator() -> ModuleType:
    path = corpus.DATA_DIR / "generate.py"
    spec = importlib.util.spec_from_file_location("golden_data_generate", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def cmd_verify(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    try:
        man = corpus.check_manifest(args.data)
        print(f"golden verify: {corpus.MANIFEST}: {len(man['files'])} files, sha256 and sizes match")
        worst_all = 0.0
        n_cases = n_recomputed = 0
        for fam in [f for f in corpus.FAMILIES if f"{f}.json" in man["files"]]:
            header, cases = corpus.load_family(fam, args.data, manifest=False)
            n_cases += len(cases)
            pick = cases if args.full else sorted(cases, key=lambda c: c.cost)[: max(0, args.sample)]
            if args.full:  # recipe inputs (the Llama-7B row) are regenerated and checked against their sha256
                for case in cases:
                    _ = case.inputs
            worst = 0.0
            for case in pick:  # small cases by the independent plain-mpmath evaluator, large ones by the fast path
                fresh = corpus.recompute(case, method="mpmath" if case.cost <= 4000 else "auto")
                rel = corpus.compare(case, fresh)
                same = all((case.golden.rounded(dt) == fresh.rounded(dt)).all() for dt in corpus.DTYPE_NAMES.values())
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
            print(
                f"golden verify: {fam}.json: {len(cases)} cases, inputs/goldens sha256 ok; recomputed "
                f"{len(pick)} (max relative difference {worst:.2g}); mpmath {prov.get('mpmath')}, "
                f"generator {header.get('generator_version')}"
            )
    except corpus.CorpusError as exc:
        print(f"golden verify: REFUSED: {exc}", file=sys.stderr)
        return 1
    print(
        f"golden verify: OK — {n_cases} cases, {n_recomputed} recomputed, max relative difference "
        f"{worst_all:.2g} ≤ 2^-100, {time.perf_counter() - t0:.1f} s"
    )
    return 0


def cmd_regen(args: argparse.Namespace) -> int:
    families = tuple(args.family or corpus.FAMILIES)
    existing = [args.data / f"{f}.json" for f in families if (args.data / f"{f}.json").exists()]
    if existing and not args.force:
        print(
            f"golden regen: refusing to overwrite {', '.join(str(p) for p in existing)}; pass --force", file=sys.stderr
        )
        return 2
    gen = _generator()
    with tempfile.TemporaryDirectory() as tmp:  # write aside, then move: an interrupted regen leaves no half file
        tmpdir = Path(tmp)
        for f in corpus.FAMILIES:
            if f not in families and (args.data / f"{f}.json").exists():
                shutil.copy(args.data / f"{f}.json", tmpdir / f"{f}.json")
        print(f"golden regen: generating {', '.join(families)} (generator {gen.GENERATOR_VERSION})")
        gen.generate(tmpdir, families)
        args.data.mkdir(parents=True, exist_ok=True)
        for f in families:
            shutil.move(str(tmpdir / f"{f}.json"), args.data / f"{f}.json")
        shutil.move(str(tmpdir / corpus.MANIFEST), args.data / corpus.MANIFEST)
    print(f"golden regen: wrote {args.data}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from golden import bench

    return bench.run(args.dim, args.hidden, args.slice)
