"""JSON: the versioned reports of ``check`` (``--json``) and ``compare`` (``results.json``), and their JSON Schemas
shipped in the package (``properties/schemas/``, generated from the typed models of ``render/models.py``). A report
carries the command line that reproduces its run and the command's exit status. A compare report reads back
(``compare_from_json``) to be rendered again without re-running the laws."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import signal
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from properties import __version__
from properties.commands.results import Cell, counts, exit_status_of, library_versions
from properties.running import findings, profiles
from properties.running.session import Run, SubjectInfo

__all__ = [
    "CHECK_SCHEMA",
    "COMPARE_SCHEMA",
    "LIST_SCHEMA",
    "SCHEMA_FILES",
    "check_report",
    "compare_from_json",
    "compare_report",
    "dumps",
    "law_list",
    "schema",
    "write",
]

CHECK_SCHEMA = "nanolm-verify/check-report/3"  # /3: + reproduce, exit_status
COMPARE_SCHEMA = "nanolm-verify/compare-report/3"  # /3: + exit_status
LIST_SCHEMA = "nanolm-verify/law-list/1"  # check --list --json
SCHEMA_FILES = {
    CHECK_SCHEMA: "check-report.schema.json",
    COMPARE_SCHEMA: "compare-report.schema.json",
    LIST_SCHEMA: "law-list.schema.json",
}


def schema(doc_schema: str) -> dict[str, Any]:
    """The shipped JSON Schema (a dict) of the report kind ``doc_schema`` (CHECK_SCHEMA or COMPARE_SCHEMA)."""
    if doc_schema not in SCHEMA_FILES:
        raise ValueError(f"unknown report schema {doc_schema!r}; known: {', '.join(SCHEMA_FILES)}")
    name = SCHEMA_FILES[doc_schema]
    return json.loads(resources.files("properties").joinpath("schemas", name).read_text(encoding="utf-8"))


def _interruption(signum: int | None) -> dict[str, Any]:
    return {"interrupted": bool(signum), "interrupted_by": signal.Signals(signum).name if signum else None}


def _device_name(device: str) -> str:
    if device == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return platform.processor() or platform.machine()


def check_report(run: Run, info: SubjectInfo, *, exit_status: int, threads: int = 1) -> dict[str, Any]:
    """The versioned JSON report of a ``check`` run (key ``schema``; its JSON Schema:
    ``properties/schemas/check-report.schema.json``); ``exit_status``: the command's; ``threads``: torch's threads
    in each worker."""
    prof, results, devices = profiles.get(run.selection.profile), run.results, list(run.selection.devices)
    n = counts(results)
    return {
        "schema": CHECK_SCHEMA,
        "suite": {"name": "nanolm-verify", "version": __version__},
        "implementation": {
            "spec": info.spec,
            "module": info.module,
            "file": info.file,
            "provided": list(info.provided),
            "skip_reason": info.skip_reason,
            "conventions": info.conventions,
            "import_effects": list(info.import_effects),
            "kernels": info.kernels,
            "declarations": [d.to_json() for d in findings.subject_declarations(results, info)],
        },
        "platform": {
            "python": platform.python_version(),
            "os": platform.platform(),
            "machine": platform.machine(),
            "libraries": library_versions(),
        },
        "target": {
            "devices": devices,
            "device_names": {d: _device_name(d) for d in devices},
            "cuda_available": torch.cuda.is_available(),
            "torch_threads": threads,
        },
        "profile": {
            "name": prof.name,
            "max_examples": prof.max_examples,
            "derandomize": prof.derandomize,
            "slow_tier": prof.slow,
        },
        "seed": run.selection.seed,
        "reproduce": run.selection.command("check", info.spec),
        "exit_status": exit_status,
        **_interruption(run.interrupted),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "duration": round(run.duration, 3),
        "summary": {
            "passed": n["passed"],
            "failed": n["failed"],
            "skipped": n["skipped"],
            "errors": n["error"],
            "xfailed": n["xfailed"],
            "xpassed": n["xpassed"],
            "total": len(results),
            "planned": run.planned,
        },
        "results": [r.to_json() for r in results],
    }


def compare_report(report: dict[str, Any]) -> dict[str, Any]:
    """A comparison (``results.compare``) as its JSON report (COMPARE_SCHEMA)."""
    return {
        "schema": COMPARE_SCHEMA,
        "meta": report["meta"],
        "exit_status": exit_status_of(report),
        **_interruption(report.get("interrupted")),
        "impls": report["impls"],
        "cells": [dataclasses.asdict(c) | {"accuracy_class": c.accuracy} for c in report["cells"]],
        "results": report["results"],
    }


def compare_from_json(data: dict[str, Any]) -> dict[str, Any]:
    """A comparison back from its results.json: re-render without re-running the laws."""
    names = {f.name for f in dataclasses.fields(Cell)}
    cells = [Cell(**{k: v for k, v in c.items() if k in names}) for c in data["cells"]]
    for cell in cells:
        cell.problems = [tuple(p) for p in cell.problems]
    interrupted = data.get("interrupted_by")
    return {
        "impls": data["impls"],
        "cells": cells,
        "results": data["results"],
        "meta": data["meta"],
        "interrupted": int(signal.Signals[interrupted]) if interrupted else None,
        "unavailable": {},
    }


def law_list(laws: Any) -> dict[str, Any]:
    """``check --list --json``: the laws (id, component, dtypes, statement) and the adapter ids with their modules
    (the entry points ``nanolm_verify.adapters``, a library's own included)."""
    from golden.formats import fmt
    from properties.running.loading import adapters

    return {
        "schema": LIST_SCHEMA,
        "laws": [
            {"id": w.id, "component": w.component, "dtypes": [fmt(d).name for d in w.dtypes], "statement": w.doc}
            for w in laws
        ],
        "adapters": adapters(),
    }


def dumps(doc: dict[str, Any]) -> str:
    """``doc`` as indented UTF-8 JSON text (what ``write`` writes)."""
    return json.dumps(json.loads(json.dumps(doc, default=str)), indent=1, ensure_ascii=False)


def write(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """``doc`` as indented UTF-8 JSON at ``path`` (its folder created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(doc) + "\n", encoding="utf-8")
    return path
