"""Command-line arguments: each option declared once (one flag, one default, one help text for every command that
has it: ``add``, ``add_selection``, ``add_run_options``) and validated before any work starts into the session's
``Selection`` and ``RunOptions``. Each check raises ``UsageError`` with one line that names the argument, what is
wrong with it and the fix (the commands print it and exit 2, no traceback)."""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from properties.commands.helptext import DTYPE_NAMES as NAMES
from properties.library import components  # light: names() imports no torch
from properties.running import interpreted as _interpreted  # light: its numpy and Triton imports are lazy
from properties.running import profiles
from properties.running.loading import UsageError, resolve_spec

if TYPE_CHECKING:  # the validators import the heavy modules when they run: declaring the options (--help) is light
    from properties.running.session import RunOptions, Selection

__all__ = [
    "OPTIONS",
    "UsageError",
    "add",
    "add_run_options",
    "add_selection",
    "devices",
    "distinct",
    "dtypes",
    "implementation",
    "implementation_files",
    "input_json",
    "output_dir",
    "output_file",
    "positive",
    "run_options",
    "selection",
    "threads",
]


def implementation(value: str | None) -> str:
    """The implementation spec (argument > $NANOLM_IMPL > nanolm_core); an empty name is refused."""
    spec = resolve_spec(value)
    if not spec.strip():
        raise UsageError("IMPL is empty: name a module (pkg.mod), a .py file or an adapter id (e.g. torch)")
    if spec.endswith(".py") or "/" in spec or os.sep in spec:  # a path: checked here, imported by a worker
        path = Path(spec)
        if path.is_dir():
            raise UsageError(f"IMPL {spec!r} is a directory; name a .py file or a module")
        if not path.is_file():
            raise UsageError(f"IMPL {spec!r}: implementation file does not exist")
    return spec


def dtypes(values: Sequence[str] | None) -> list[str] | None:
    """``--dtype`` (repeatable, comma-separated): known names, none empty, none twice; None = every dtype."""
    if values is None:
        return None
    names = [s.strip() for item in values for s in item.split(",")]
    if not names or any(not n for n in names):
        raise UsageError(f"--dtype {','.join(values)!r} names an empty dtype; use e.g. --dtype fp32,bf16")
    from golden.formats import fmt

    try:
        chosen = [fmt(n).name for n in names]
    except ValueError:
        bad = next(n for n in names if n.lower().removeprefix("torch.") not in _known_names())
        raise UsageError(f"--dtype {bad!r} is not a dtype; expected one of {', '.join(NAMES)}") from None
    twice = sorted({n for n in chosen if chosen.count(n) > 1})
    if twice:
        raise UsageError(f"--dtype names {', '.join(twice)} twice; name each dtype once")
    return chosen


def _known_names() -> set[str]:
    out = set()
    for n in (*NAMES, "float64", "float32", "float16", "bfloat16", "double", "float", "half"):
        out.add(n)
    return out


def devices(value: str, allow_skips: bool = False) -> list[str]:
    """``--device``: any torch device string, a comma-separated list, ``auto`` or ``all``. A device this machine
    does not have is a usage error unless skips are explicitly allowed (then its results are skipped)."""
    from properties.running import devices as _devices

    if not value.strip():
        raise UsageError("--device is empty: use cpu, cuda, cuda:1, mps, auto or all")
    try:
        chosen = _devices.resolve(value)
    except ValueError as exc:
        raise UsageError(f"--device {exc}; use cpu, cuda, cuda:1, mps, auto or all") from None
    for device in chosen:
        problem = _devices.problem(device)
        if problem and not allow_skips:
            raise UsageError(
                f"--device {value}: {problem}; use --device cpu, or --allow-skips to report its results as skipped"
            )
    return chosen


def database(value: str) -> str:
    """``--database``: a directory (created when absent) or a reachable ``redis://HOST:PORT`` server."""
    from properties.running import databases as _databases

    if not value.strip():
        raise UsageError("--database is empty: give a directory or redis://HOST:PORT")
    try:
        _databases.check(value)
    except ValueError as exc:
        raise UsageError(f"--database {exc}") from None
    if not value.startswith(("redis://", "rediss://", "unix://")) and not Path(value).exists():
        _writable_parent(Path(value), "--database")
    return value


def threads(value: int) -> int:
    """``--threads``: 1 … the machine's CPU count."""
    most = os.cpu_count() or 1
    if not 1 <= value <= most:
        raise UsageError(f"--threads {value}: expected 1 … {most} (this machine's CPU count)")
    return value


def positive(value: float, name: str, kind: Callable[[Any], Any] = float, most: float | None = None) -> Any:
    """A positive, finite number (``--timeout``, sizes), at most ``most`` where given."""
    if not math.isfinite(value) or not value > 0:
        raise UsageError(f"{name} {value}: must be a positive, finite number")
    if most is not None and value > most:
        raise UsageError(f"{name} {value:g}: at most {most:g} ({_MOST.get(name, 'the largest this run accepts')})")
    return kind(value)


def most_workers() -> int:
    """The most worker processes a run may start: 4 per CPU (each loads torch: more only queue and swap)."""
    return 4 * (os.cpu_count() or 1)


_MOST = {
    "--workers": "4 per CPU of this machine",
    "--timeout": "one week",
    "--minutes": "one week",
    "--memory-limit": "this machine's memory, GiB",
}
MOST_TIMEOUT = 7 * 24 * 3600.0  # s: a per-law limit beyond a week is a typo, never a plan


def _memory_gib() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def implementation_files(spec: str) -> list[Path]:
    """The source files of an implementation spec, found without importing anything (a .py path, or the module's
    file or package on sys.path; an adapter id: its adapter's module) — the inputs no output may overwrite."""
    from properties.running.loading import ADAPTERS

    target = ADAPTERS.get(spec, spec)
    if target.endswith(".py") or "/" in target or os.sep in target:
        return [Path(target)]
    parts = target.split(".")
    found = []
    for root in sys.path or ["."]:
        base = Path(root or ".").joinpath(*parts)
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                found.append(path)
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def distinct(outputs: dict[str, Path | None], inputs: dict[str, Iterable[Path]]) -> None:
    """No output names an input of the run, nor another output (paths resolved: links and ``..`` followed).
    ``outputs``: option → the file it writes; ``inputs``: what the run reads, by name → its files. UsageError
    naming both, before any work."""
    named = [(name, Path(p)) for name, p in outputs.items() if p is not None]
    for i, (name, out) in enumerate(named):
        for what, paths in inputs.items():
            hit = next((p for p in paths if _same(out, Path(p))), None)
            if hit is not None:
                raise UsageError(f"{name} {out} is {what} ({hit}): the run would overwrite its own input")
        for other, path in named[:i]:
            if _same(out, path):
                raise UsageError(f"{name} {out} and {other} {path} name the same path; give each its own")


def run_inputs(
    spec: str | None, selection: Selection | None = None, baseline: str | None = None
) -> dict[str, list[Path]]:
    """The files a run reads, by what they are: the implementation's source, the expectation files (the user's
    and the shipped ones), an existing baseline, the stored golden corpus — what ``distinct`` protects."""
    from golden import corpus
    from properties.running import expectations as _expectations

    out: dict[str, list[Path]] = {}
    if spec is not None:
        out["the implementation"] = implementation_files(spec)
    if selection is not None:
        out["an expectations file"] = [Path(p) for p in selection.expectations]
    out["a shipped expectations file"] = sorted(_expectations.DIRECTORY.glob("*"))
    if baseline is not None and Path(baseline).exists():
        out["the baseline"] = [Path(baseline)]
    out["the stored golden corpus"] = sorted(corpus.DATA_DIR.glob("*"))
    return out


def _writable_parent(path: Path, name: str) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    existing = next((p for p in (parent, *parent.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        raise UsageError(f"{name} {path}: {existing} is a file, not a directory; choose another path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{name} {path}: {existing} is not writable; choose another path")


def output_file(value: str | None, name: str) -> Path | None:
    """A file the command will write (``--json``, ``--baseline`` when absent): not a directory, creatable."""
    if value is None:
        return None
    if not value.strip():
        raise UsageError(f"{name} is empty: give a file path")
    path = Path(value)
    if path.is_dir():
        raise UsageError(f"{name} {path}: is a directory; give a file path (e.g. {path / 'report.json'})")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{name} {path}: exists and is not writable")
    _writable_parent(path, name)
    return path


def output_dir(value: str, name: str) -> Path:
    """A directory the command will write into (``compare --out``): a directory or creatable as one."""
    if not value.strip():
        raise UsageError(f"{name} is empty: give a directory")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{name} {path}: is a file, not a directory; give a directory")
    if path.exists() and not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{name} {path}: is not writable")
    if not path.exists():
        _writable_parent(path, name)
    return path


def input_json(value: str, name: str, required: Iterable[str] = (), schema: str | None = None) -> dict[str, Any]:
    """A JSON file the command reads (``--baseline``): readable, valid JSON, an object with ``required`` keys and,
    if given, the ``schema`` id."""
    path = Path(value)
    if path.is_dir():
        raise UsageError(f"{name} {path}: is a directory; give the JSON file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{name} {path}: cannot be read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{name} {path}: not valid JSON ({exc}); delete it to record a new one") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{name} {path}: expected a JSON object, found {type(doc).__name__}")
    if schema is not None and doc.get("schema") != schema:
        raise UsageError(f"{name} {path}: schema {doc.get('schema')!r}, expected {schema!r} (not a file of ours?)")
    missing = [k for k in required if k not in doc]
    if missing:
        raise UsageError(f"{name} {path}: lacks {', '.join(missing)} (truncated or foreign?)")
    return doc


# ---------------------------------------------------------------------------------------------- declared once

_TIMEOUTS = ", ".join(f"{p.name} {p.timeout:g} s" for p in profiles.PROFILES.values())

# dest → (flags, argparse keywords): every command that has an option declares it from here.
OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "profile": (("--profile",), dict(
        default=None, choices=list(profiles.PROFILES),
        help=f"budget: ci (fast, derandomized), dev, thorough (default: ${profiles.ENV_VAR}, else "
        f"{profiles.DEFAULT_PROFILE})",
    )),
    "only": (("--only",), dict(
        action="append", default=None, metavar="SEL",
        help=f"components ({', '.join(components.names())}), law ids or names; repeatable, comma-separated "
        "(default: all)",
    )),
    "dtype": (("--dtype",), dict(
        action="append", default=None, metavar="DT", help=f"{','.join(NAMES)}; repeatable (default: all)"
    )),
    "device": (("--device",), dict(
        action="append", default=None, metavar="DEV",
        help="cpu, cuda, cuda:1, mps, … (comma-separated), auto (cpu + accelerators) or all (default: auto)",
    )),
    "allow_skips": (("--allow-skips",), dict(
        action="store_true", help="report a device this machine lacks as skipped (default: a usage error)"
    )),
    "allow_nothing_judged": (("--allow-nothing-judged",), dict(
        action="store_true", help="exit 0 when every law run was skipped (default: exit 1, saying why)"
    )),
    "seed": (("--seed",), dict(
        type=int, default=None, metavar="N", help="Hypothesis seed (default: derandomized in ci, random otherwise)"
    )),
    "database": (("--database",), dict(
        default=None, metavar="DIR|URL",
        help="shared example database, replayed first: a directory or redis://HOST:PORT (default: none)",
    )),
    "workers": (("--workers",), dict(
        type=int, default=None, metavar="N",
        help="worker processes running the laws (default: one per CPU, at most one per 4 GiB of memory)",
    )),
    "threads": (("--threads",), dict(
        type=int, default=1, metavar="N",
        help="torch CPU threads per worker (default: 1; small tensors, threads only add contention)",
    )),
    "timeout": (("--timeout",), dict(
        type=float, default=None, metavar="S", help=f"per-law time limit (default: the profile's: {_TIMEOUTS})"
    )),
    "memory_limit": (("--memory-limit",), dict(
        type=float, default=None, metavar="GB",
        help="memory cap per worker, GiB (default: 90 %% of the memory, shared by the workers)",
    )),
    "triton": (("--triton",), dict(
        choices=_interpreted.MODES, default="auto",
        help="how Triton kernels run in the workers: interpret (Triton's interpreter, CPU tensors), compiled "
        "(CUDA), auto (default: interpreted where there is no CUDA device)",
    )),
    "expectations": (("--expectations",), dict(
        action="append", default=[], metavar="FILE",
        help="your xfail/skip entries (format: properties/running/expectations.py), applied before the "
        "implementation's shipped file; repeatable",
    )),
    "no_expectations": (("--no-expectations",), dict(
        action="store_true", help="ignore the implementations' shipped expectation files "
        "(properties/expectations/<id>.txt)",
    )),
    "quiet": (("-q", "--quiet"), dict(action="store_true", help="no progress line; failures in one line each")),
    "json_path": (("--json",), dict(default=None, metavar="PATH", help="write the JSON report here")),
}  # fmt: skip


def add(parser: Any, *names: str) -> None:
    """Declare the options ``names`` (keys of OPTIONS) on ``parser`` or an argument group."""
    for name in names:
        flags, keywords = OPTIONS[name]
        parser.add_argument(*flags, dest=name, **keywords)


def add_selection(parser: argparse.ArgumentParser, *, laws: bool = True) -> Any:
    """The group "what to run": profile, (``laws``: --only, --dtype), device(s), seed → the group."""
    example = "example: --only RMSNorm,swiglu_matches_golden --dtype bf16" if laws else "example: --device cpu"
    group = parser.add_argument_group("what to run", example)
    add(group, "profile", *(("only", "dtype") if laws else ()), "device", "allow_skips", "seed")
    if laws:  # (the catalogue judges its own demonstrations)
        add(group, "allow_nothing_judged")
    return group


def add_run_options(parser: argparse.ArgumentParser, *, database: bool = True) -> Any:
    """The group "how to run": workers, threads, time limit, memory cap (and an example database) → the group."""
    group = parser.add_argument_group("how to run", "example: --workers 1 --timeout 120 --memory-limit 4")
    add(group, "workers", "threads", "timeout", "memory_limit", "triton", *(("database",) if database else ()))
    return group


def add_expectations(parser: argparse.ArgumentParser) -> Any:
    """The group "expectations": the user's files, and leaving the shipped ones out → the group."""
    group = parser.add_argument_group("expectations", "example: --expectations my-known-failures.txt")
    add(group, "expectations", "no_expectations")
    return group


def selection(args: argparse.Namespace, *, laws: bool = True) -> Selection:
    """The session's Selection from the options ``add_selection`` (and ``add_expectations``) declared, validated;
    ``laws``: the selection must run at least one law."""
    from properties.running.session import Selection

    get = functools.partial(getattr, args)
    only = [s.strip() for item in get("only", None) or () for s in item.split(",") if s.strip()]
    chosen = Selection(
        profile=profiles.resolve(get("profile", None)).name,
        devices=tuple(devices(",".join(get("device", None) or ["auto"]), get("allow_skips", False))),
        dtypes=tuple(dtypes(get("dtype", None)) or ()) or None,
        only=tuple(only) or None,
        seed=get("seed", None),
        database=database(get("database")) if get("database", None) is not None else None,
        expectations=tuple(get("expectations", ())),
        shipped_expectations=not get("no_expectations", False),
    )
    for path in chosen.expectations:
        expectations_file(path)
    if laws and not chosen.tasks():  # (an unknown --only is a UsageError here)
        raise UsageError("the selection runs no law: no selected law is defined for the selected dtypes")
    return chosen


def run_options(args: argparse.Namespace, profile: str) -> RunOptions:
    """The session's RunOptions from the options ``add_run_options`` declared, validated, defaults filled in."""
    from properties.running.session import RunOptions

    workers, timeout, memory = (getattr(args, name, None) for name in ("workers", "timeout", "memory_limit"))
    return RunOptions.of(
        profile,
        workers=positive(workers, "--workers", int, most_workers()) if workers is not None else None,
        timeout=positive(timeout, "--timeout", float, MOST_TIMEOUT) if timeout is not None else None,
        memory_gib=positive(memory, "--memory-limit", float, _memory_gib()) if memory is not None else None,
        threads=threads(getattr(args, "threads", 1)),
        triton=getattr(args, "triton", "auto"),
    )


def expectations_file(path: str) -> None:
    """``--expectations FILE``: readable and well-formed (its first bad line is the error)."""
    from properties.running import expectations as _expectations

    try:
        _expectations.read(path)
    except _expectations.ExpectationError as exc:
        raise UsageError(f"--expectations {exc}") from None
