"""The published report schemas (``properties/schemas/``): valid JSON Schemas, met by what ``check`` and ``compare``
write (failures, counterexamples and interrupted runs included) and by every example report in ``docs/``."""

from __future__ import annotations

import json
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
from properties.entry.cli import main
from properties.running.loading import load
from properties.running.runner import LawResult
from properties.running.session import Run, Selection, Subject, SubjectInfo

DOCS = Path(__file__).parents[2] / "docs"
CHECK = report.schema(report.CHECK_SCHEMA)
COMPARE = report.schema(report.COMPARE_SCHEMA)


def _validate(doc: dict) -> None:
    jsonschema.Draft202012Validator(report.schema(doc["schema"])).validate(doc)


def test_the_shipped_schemas_are_json_schemas_with_one_id_scheme():
    for schema, sid in ((CHECK, report.CHECK_SCHEMA), (COMPARE, report.COMPARE_SCHEMA)):
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["properties"]["schema"] == {"const": sid}
        assert sid.startswith("nanolm-verify/") and sid.endswith("-report/2")


def test_a_check_report_with_a_failure_and_a_pass_meets_its_schema_and_a_broken_one_does_not(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["check", "properties.gallery.eps_outside_sqrt", "--only", "rmsnorm_matches_golden,rmsnorm_preserves_sign"]
    assert main([*args, "--dtype", "fp32", "--profile", "ci", "--workers", "1", "--json", str(out)]) == 1
    doc = json.loads(out.read_text())
    _validate(doc)
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
    assert list(doc["results"]) == ["reference"] and 2 <= len(doc["results"]["reference"]) < 15


def test_every_field_of_a_law_record_is_described_by_the_schema():
    record = LawResult("RMSNorm.rmsnorm_matches_golden", "RMSNorm", "fp32", "cpu", "passed").to_json()
    described = set(CHECK["$defs"]["result"]["properties"])
    assert set(record) <= described, set(record) - described
    assert CHECK["$defs"]["result"] == COMPARE["$defs"]["result"]  # one record format in both reports


def test_the_schemas_name_every_component_the_suite_knows():
    """A JSON Schema is data: its list of components is tied to ``COMPONENTS`` here (a new component, e.g.
    AddRMSNorm, must be added there too, or every report that provides it is invalid)."""
    from properties.library.subject import COMPONENTS

    provided = [
        CHECK["properties"]["implementation"]["properties"]["provided"]["items"]["enum"],
        COMPARE["properties"]["impls"]["items"]["properties"]["provided"]["items"]["enum"],
    ]
    assert provided == [list(COMPONENTS), list(COMPONENTS)]
