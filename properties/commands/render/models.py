"""The JSON reports as typed models — the one description of their shape, from which the shipped JSON Schemas
(``properties/schemas/*.schema.json``) are generated, never written by hand.

    python -m properties.commands.render.models          # regenerate the schema files from these models
    python -m properties.commands.render.models --check  # exit 1 when a file differs from what they generate

Pydantic v2 (``BaseModel.model_json_schema``: draft 2020-12, shared definitions under ``$defs``) turns the
annotations into JSON Schema; only this module and the tests import it (the reports themselves are plain data
from the results model, ``properties.commands.render.json``), so it is a test and development dependency, not a
run-time one. Keys a report does not know are allowed (a newer writer may add a field, e.g. a result's ``tier``):
a reader checks what it needs.

Each schema's ``$id`` is its own path in the installed package, ``properties/schemas/NAME.schema.json``:
``importlib.resources.files("properties").joinpath("schemas", NAME + ".schema.json")`` reads it
(``properties.commands.render.json.schema``); a report names its schema by the version in its key ``schema``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import GenerateJsonSchema

from golden.formats import NAMES
from properties.commands.render.json import CHECK_SCHEMA, COMPARE_SCHEMA, LIST_SCHEMA, SCHEMA_FILES
from properties.library.subject import COMPONENTS

__all__ = ["MODELS", "generate", "schema_file"]

Component = Literal[tuple(COMPONENTS)]  # the law library's components, in contract order
Dtype = Literal[tuple(NAMES)]  # golden.formats' dtype names, in report order
Count = Annotated[int, Field(ge=0)]
# A float as the report writes it: a JSON number, or the strings inf, -inf, nan (JSON has no non-finite numbers),
# or null where nothing was measured.
Number = float | Literal["inf", "-inf", "nan"] | None
Signal = Literal["SIGINT", "SIGTERM"] | None
Cause = Literal["law", "contract", "crash", "timeout"]


def _doc(text: str) -> Any:
    return Field(description=" ".join(text.split()))


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")  # unknown keys allowed: the schema says what a reader may rely on


class Suite(_Model):
    name: Literal["nanolm-verify"]
    version: str


class Declaration(_Model):
    component: str
    key: str
    value: Any
    needed: list[str]
    unneeded: list[str]
    headroom_without: float | None
    warning: bool
    text: str


class Implementation(_Model):
    spec: str
    module: str
    file: str | None = None
    provided: list[Component]
    skip_reason: str | None = None
    conventions: dict[str, Any]
    import_effects: list[str] = []
    declarations: list[Declaration] = Field(
        [],
        description="Each numeric convention a provided component declares, and the dtypes whose measurements "
        "needed it (properties.running.findings); warning: needed in no measured dtype.",
    )


class Platform(_Model):
    python: str
    os: str
    machine: str | None = None
    libraries: dict[str, str | None]


class Target(_Model):
    devices: Annotated[list[str], Field(min_length=1)]
    device_names: dict[str, str] = {}
    cuda_available: bool | None = None
    torch_threads: int | None = None


class Profile(_Model):
    name: str
    max_examples: int
    derandomize: bool
    slow_tier: bool


class Summary(_Model):
    passed: Count
    failed: Count
    skipped: Count
    errors: Count
    xfailed: Count
    xpassed: Count
    total: Count
    planned: Count


class Bound(_Model):
    abs: Number
    ulps: Number
    formula: str


class Result(_Model):
    """One law × component × dtype × device run (properties.running.runner.LawResult)."""

    law_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9]+\.[a-z0-9_]+$")]
    component: str
    dtype: Dtype
    device: str
    status: Literal["passed", "failed", "skipped", "error", "xfailed", "xpassed"]
    message: str
    cause: Cause | None = _doc("Why a failed result failed (null unless failed).")
    max_ulp: Number = _doc("Max ULP error against golden over the law's examples (null: not measured).")
    p99_ulp: Number
    headroom: Number = _doc("Max |error| ÷ derived bound over the law's examples; ≤ 1 passes.")
    headroom_median: Number = Field(
        None,
        description="Median over the law's examples of each example's headroom (max |error| ÷ bound within the "
        "example): how much of the bound a typical case uses; its inverse is the slack. Null when the law compares "
        "nothing against a bound.",
    )
    bound: Bound | None = _doc("The bound where the max headroom was reached: allowed |error|, in ULPs, its formula.")
    worst_input: dict[str, Any] | None
    examples: Count
    duration: Annotated[float, Field(ge=0)]
    found_after: Count | None
    profile: str
    seed: int | None
    measurements: dict[str, Any]
    law: str
    counterexample: str | None = _doc("Failed: the .pt file that `nanolm-verify replay FILE` re-runs.")
    declared: str = Field(
        "", description="The component's declared conventions this run honoured (Conventions.summary()); empty: none."
    )
    diagnosis: str | None = Field(
        None,
        description="Failed (cause law): the known convention or bug the counterexample looks like "
        "(properties.library.diagnosis), 'no known convention matches', or null when it could not be judged.",
    )
    tier: Literal["probabilistic", "deterministic", "empirical"] | None = Field(
        None,
        description="The tier that judged the result: 'probabilistic' (the sharp tier judged some comparison; "
        "failed: the tier the worst element exceeded), 'deterministic' (the derived bound alone), 'empirical' (the "
        "Block derivative oracle); null where no rounding bound judged (bitwise and exact laws). Measurement "
        "'tier off' names a declaration that kept the probabilistic tier off drawn inputs.",
    )


class CheckReport(_Model):
    """Written by `nanolm-verify check --json PATH`."""

    schema_: Literal[CHECK_SCHEMA] = Field(alias="schema")
    suite: Suite
    implementation: Implementation
    platform: Platform
    target: Target
    profile: Profile
    seed: int | None
    reproduce: str = _doc(
        """The command line that runs the same selection again (implementation, profile, devices, laws, dtypes,
        seed, database, expectation files); a run without a seed under a randomized profile draws new examples."""
    )
    exit_status: int = _doc(
        """The command's exit status: 0 every law passed (skips and expected failures allowed), 1 a law failed or
        the suite hit an error (or the baseline found a regression), 128 + the signal when interrupted."""
    )
    interrupted: bool = _doc("True when Ctrl-C or SIGTERM stopped the run: the results are those finished by then.")
    interrupted_by: Signal
    created: Annotated[str, Field(json_schema_extra={"format": "date-time"})]
    duration: float | None
    summary: Summary
    results: list[Result]


class Meta(_Model):
    profile: str
    devices: list[str]
    seed: int | None
    versions: dict[str, str | None]
    platform: str
    date: str
    command: str = _doc("The command line that makes this comparison again (its reproduce command).")


class ComparedImplementation(_Model):
    spec: str
    module: str
    provided: list[Component]
    skip_reason: str | None
    conventions: dict[str, Any]
    declared: dict[str, str] = _doc("Each component's declared conventions in one line.")


class Cell(_Model):
    """One implementation × component × dtype × device (properties.commands.results.Cell)."""

    impl: str
    component: str
    dtype: Dtype
    device: str
    counts: dict[str, Count]
    max_ulp: Number
    p99_ulp: Number
    headroom: Number = _doc("Max |error| ÷ bound over every law of the cell; ≤ 1 passes.")
    headroom_law: str | None
    worst_law: str | None
    worst_input: dict[str, Any] | None
    batch_invariant: bool | None
    batch_source: str
    problems: list[tuple[str, str, str]]
    skip_reason: str
    accuracy_class: str


class CompareReport(_Model):
    """results.json written by `nanolm-verify compare IMPL... --out DIR`; its law records are the check report's."""

    schema_: Literal[COMPARE_SCHEMA] = Field(alias="schema")
    meta: Meta
    exit_status: int = _doc(
        """The command's exit status: 0 every law passed (or failed as expected) for every implementation, 1 a law
        failed for some implementation, 128 + the signal when interrupted."""
    )
    interrupted: bool
    interrupted_by: Signal
    impls: list[ComparedImplementation]
    cells: list[Cell]
    results: dict[str, list[Result]] = _doc("Every law record per implementation (expectations applied).")


class ListedLaw(_Model):
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9]+\.[a-z0-9_]+$")]
    component: str
    dtypes: list[Dtype]
    statement: str = _doc("The law (its docstring).")


class LawList(_Model):
    """Written by `nanolm-verify check --list --json PATH|-`: the laws selected (--only) and the adapter ids."""

    schema_: Literal[LIST_SCHEMA] = Field(alias="schema")
    laws: list[ListedLaw]
    adapters: dict[str, str] = _doc(
        """Adapter id → the module it names: the entry points nanolm_verify.adapters of every installed
        distribution (the suite's own and any a library registers)."""
    )


MODELS: dict[str, type[BaseModel]] = {CHECK_SCHEMA: CheckReport, COMPARE_SCHEMA: CompareReport, LIST_SCHEMA: LawList}


class _Generator(GenerateJsonSchema):
    """Pydantic's draft 2020-12 output without the titles it derives from Python names (noise for a reader)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: Any, mode: Any = "validation") -> Any:
        out = super().generate(schema, mode)
        for definition in out.get("$defs", {}).values():
            definition.pop("title", None)
        return out


def generate(doc_schema: str) -> dict[str, Any]:
    """The JSON Schema of the document kind ``doc_schema`` (CHECK_SCHEMA, COMPARE_SCHEMA, LIST_SCHEMA), from its
    model."""
    model = MODELS[doc_schema]
    body = model.model_json_schema(by_alias=True, schema_generator=_Generator)
    name = SCHEMA_FILES[doc_schema]
    description = " ".join((model.__doc__ or "").split())
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"properties/schemas/{name}",
        "title": f"nanolm-verify {name.removesuffix('.schema.json').replace('-', ' ')}",
        "description": f"{description} Version {doc_schema} (its key `schema`). Generated from "
        f"properties/commands/render/models.py. The $id is this file's path in the installed package: "
        f"importlib.resources.files('properties').joinpath('schemas', '{name}') reads it.",
        **{k: v for k, v in body.items() if k not in ("title", "description")},
    }


def schema_file(doc_schema: str) -> Path:
    """The shipped schema file of ``doc_schema`` in this source tree (the one the generator writes)."""
    return Path(__file__).resolve().parents[2] / "schemas" / SCHEMA_FILES[doc_schema]


def text(doc: dict[str, Any]) -> str:
    """A schema as the shipped file holds it."""
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate (or --check) the report schemas from the models.")
    parser.add_argument("--check", action="store_true", help="exit 1 when a shipped schema differs; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for doc_schema in MODELS:
        path, want = schema_file(doc_schema), text(generate(doc_schema))
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != want:
            stale.append(path)
            if not args.check:
                path.write_text(want, encoding="utf-8")
    verb = "differ from the models" if args.check else "regenerated"
    print(f"{', '.join(map(str, stale))} {verb}" if stale else "the schemas are what the models generate")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
