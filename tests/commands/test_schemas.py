"""The published report schemas (``properties/schemas/``): valid JSON Schemas, met by what ``check`` and ``compare``
write (failures, counterexamples and interrupted runs included) and by every example report in ``docs/``."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from properties.commands import results
from properties.commands.render import json as report
from properties.entry.cli import build_parser, main
from properties.running.loading import load
from properties.running.runner import LawResult
from properties.running.session import Run, Selection, Subject, SubjectInfo

DOCS = Path(__file__).parents[2] / "docs"
CHECK = report.schema(report.CHECK_SCHEMA)
COMPARE = report.schema(report.COMPARE_SCHEMA)


def _validate(doc: dict) -> None:
    jsonschema.Draft202012Validator(report.schema(doc["schema"])).validate(doc)


def test_the_shipped_schemas_are_json_schemas_generated_from_the_report_models():
    from properties.commands.render import models

    for sid in report.SCHEMA_FILES:
        schema = report.schema(sid)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["properties"]["schema"]["const"] == sid
        assert schema == models.generate(sid), f"{sid}: python -m properties.commands.render.models regenerates it"
    assert models.main(["--check"]) == 0


def test_a_schema_s_id_is_its_path_in_the_installed_package():
    from importlib import resources

    for sid, name in report.SCHEMA_FILES.items():
        schema = report.schema(sid)
        package, *path = schema["$id"].split("/")
        assert path[-1] == name and "importlib.resources" in schema["description"]
        assert json.loads(resources.files(package).joinpath(*path).read_text(encoding="utf-8")) == schema


def test_the_models_generate_what_a_report_needs():
    """The generated schema is the models': a field the writer relies on, made optional or retyped in a model,
    changes it (checked on one field of each kind; the committed-file check above then fails)."""
    from properties.commands.render import models

    check = models.generate(report.CHECK_SCHEMA)
    assert {"schema", "reproduce", "exit_status", "summary", "results"} <= set(check["required"])
    result = check["$defs"]["Result"]
    assert {"law_id", "status", "headroom", "max_ulp"} <= set(result["required"])
    assert "tier" in result["properties"] and "tier" not in result["required"]  # tolerated, never demanded
    compare = models.generate(report.COMPARE_SCHEMA)
    assert "exit_status" in compare["required"] and compare["properties"]["results"]["additionalProperties"]


def test_a_check_report_with_a_failure_and_a_pass_meets_its_schema_and_a_broken_one_does_not(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["check", "properties.gallery.eps_outside_sqrt", "--only", "rmsnorm_matches_golden,rmsnorm_preserves_sign"]
    assert main([*args, "--dtype", "fp32", "--profile", "ci", "--workers", "1", "--json", str(out)]) == 1
    doc = json.loads(out.read_text())
    _validate(doc)
    assert doc["exit_status"] == 1
    again = build_parser().parse_args(shlex.split(doc["reproduce"])[1:])  # the same selection, parsed back
    assert (again.command, again.impl, again.profile) == ("check", "properties.gallery.eps_outside_sqrt", "ci")
    assert again.only == ["rmsnorm_matches_golden,rmsnorm_preserves_sign"] and again.dtype == ["fp32"]
    failed = [r for r in doc["results"] if r["status"] == "failed"]
    assert failed and all(r["counterexample"] and r["headroom"] for r in failed)
    assert doc["interrupted"] is False and doc["summary"]["planned"] == 2
    del doc["results"][0]["headroom"]
    with pytest.raises(jsonschema.ValidationError, match="headroom"):
        _validate(doc)
    doc["results"][0]["headroom"] = "big"
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)


def test_a_compare_report_meets_its_schema(tmp_path):
    records = [
        LawResult("RMSNorm.rmsnorm_matches_golden", "RMSNorm", "bf16", "cpu", "passed", max_ulp=0.5, headroom=0.3),
        LawResult("RMSNorm.rmsnorm_preserves_sign", "RMSNorm", "bf16", "cpu", "failed", "wrong", cause="law"),
    ]
    run = Run(Selection(profile="ci", dtypes=("bf16",)), [Subject(SubjectInfo.of(load("torch")), records)], 2)
    data = report.compare_report(results.compare(run))
    data = json.loads(json.dumps(data, default=str))
    _validate(data)
    assert data["cells"][0]["headroom"] == 0.3
    data["cells"][0]["counts"]["passed"] = -1
    with pytest.raises(jsonschema.ValidationError):
        _validate(data)


def _docs_reports() -> list[Path]:
    found = []
    for path in sorted(DOCS.rglob("*.json")):
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and str(doc.get("schema", "")).startswith("nanolm-verify/"):
            found.append(path)
    return found


def test_the_docs_hold_example_reports():
    assert any(p.name == "results.json" for p in _docs_reports())


@pytest.mark.parametrize("path", _docs_reports(), ids=lambda p: str(p.relative_to(DOCS)))
def test_every_example_report_in_the_docs_meets_its_schema(path):
    _validate(json.loads(path.read_text()))


def test_sigterm_during_check_writes_the_table_and_an_interrupted_report(tmp_path):
    out = tmp_path / "r.json"
    code = "import sys; from properties.entry.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "check", "--profile", "ci", "--workers", "1", "--only", "RMSNorm"]
    proc = subprocess.Popen(
        [*cmd, "--dtype", "fp32", "--json", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    for line in proc.stderr:  # off a terminal: one line per finished law
        if line.startswith("[2/") or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stdout
    assert "interrupted by SIGTERM" in stdout
    doc = json.loads(out.read_text())
    _validate(doc)
    assert all(r["law_id"].split(".", 1)[1] in stdout for r in doc["results"])  # the table of what finished
    assert doc["interrupted"] is True and doc["interrupted_by"] == "SIGTERM"
    assert doc["exit_status"] == proc.returncode
    assert 2 <= doc["summary"]["total"] < doc["summary"]["planned"]


def test_under_pytest_junit_xml_carries_each_laws_measurements(tmp_path):
    """The plugin records max ULP, headroom, bound and examples with record_property (user_properties)."""
    xml = tmp_path / "junit.xml"
    k = "rmsnorm_matches_golden and fp32 and cpu"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
         "--pyargs", "properties.conformance.test_laws", "-k", k, "--nanolm-profile", "ci", f"--junitxml={xml}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    [case] = [c for c in ET.parse(xml).iter("testcase") if "[RMSNorm.rmsnorm_matches_golden-fp32-cpu]" in c.get("name")]
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["nanolm_status"] == "passed" and int(props["nanolm_examples"]) >= 1
    assert 0 < float(props["nanolm_headroom"]) <= 1 and float(props["nanolm_max_ulp"]) > 0
    assert float(props["nanolm_headroom_bound_ulps"]) > 0 and "u_c" in props["nanolm_bound"]


def test_sigterm_during_compare_writes_a_partial_report_that_meets_its_schema(tmp_path):
    code = "import sys; from properties.entry.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "compare", "reference", "torch", "--profile", "ci", "--only", "RMSNorm"]
    proc = subprocess.Popen(
        [*cmd, "--dtype", "fp32", "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    for line in proc.stderr:  # off a terminal: one line per finished law, named by implementation
        assert line.startswith("[") or "Warning" in line or not line.strip(), line
        if line.startswith("[2/") or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stdout
    assert "interrupted by SIGTERM" in stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    _validate(doc)
    assert doc["interrupted"] is True and doc["interrupted_by"] == "SIGTERM"
    assert doc["exit_status"] == proc.returncode
    assert list(doc["results"]) == ["reference"] and 2 <= len(doc["results"]["reference"]) < 15


def test_every_field_of_a_law_record_is_described_by_the_schema():
    record = LawResult("RMSNorm.rmsnorm_matches_golden", "RMSNorm", "fp32", "cpu", "passed").to_json()
    described = set(CHECK["$defs"]["Result"]["properties"])
    assert set(record) <= described, set(record) - described
    assert CHECK["$defs"]["Result"] == COMPARE["$defs"]["Result"]  # one record format in both reports


def test_the_schemas_name_every_component_the_suite_knows():
    """The models take the components from ``COMPONENTS``: a new one is in the generated schema (and the committed
    file must be regenerated, or the generation test fails), never a report made invalid by a stale list."""
    from properties.library.subject import COMPONENTS

    provided = [
        CHECK["$defs"]["Implementation"]["properties"]["provided"]["items"]["enum"],
        COMPARE["$defs"]["ComparedImplementation"]["properties"]["provided"]["items"]["enum"],
    ]
    assert provided == [list(COMPONENTS), list(COMPONENTS)]
