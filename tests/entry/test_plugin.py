"""The pytest plugin is safe to auto-load: an unrelated project keeps its own Hypothesis profile, database and random
draws, sees no header, imports nothing heavy, and runs beside pytest-profiling and pytest-timeout; the shipped
conformance tests run from any directory, with pytest's own outcomes (xfail, XPASS, strict), reproduction lines that
work where they are printed, messages within 80 columns, user expectation files by law id or node id, and Hypothesis'
own options."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import settings

from properties.entry import plugin
from properties.running import profiles

LAW = "RMSNorm.rmsnorm_matches_golden"
WRONG = "properties.gallery.eps_outside_sqrt"  # fails LAW in fp32 on its pinned eps-dominated row
ONE = ["--pyargs", "properties.conformance.test_laws", "-k", f"{LAW}-fp32-cpu"]  # exactly one test


def pytest_in(
    directory: Path, *args: str, env: dict[str, str] | None = None, xdist: bool = False
) -> subprocess.CompletedProcess:
    """``python -m pytest ARGS`` started in ``directory`` (nothing of this repository on its path but the package)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "NANOLM_", "HYPOTHESIS_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *([] if xdist else ["-p", "no:xdist"]), *args],
        cwd=directory,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


UNRELATED_CONFTEST = """
import os
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

settings.register_profile("ci", max_examples=500, database=DirectoryBasedExampleDatabase(os.path.abspath("own-db")))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
"""

UNRELATED_TEST = """
import os
from hypothesis import given, settings, strategies as st

def test_sees_its_own_profile():
    s = settings()
    assert s.max_examples == 500, s.max_examples
    assert str(s.database.path) == os.path.abspath("own-db"), s.database

@given(st.integers())
def test_runs_with_its_own_budget(n):
    assert isinstance(n, int)
"""


@pytest.fixture
def unrelated(tmp_path: Path) -> Path:
    """A project of someone else's: its own ``ci`` profile (500 examples, its own database), loaded in its conftest."""
    (tmp_path / "conftest.py").write_text(UNRELATED_CONFTEST)
    (tmp_path / "test_theirs.py").write_text(UNRELATED_TEST)
    return tmp_path


def test_an_unrelated_suite_keeps_its_own_hypothesis_profile_and_sees_no_header(unrelated):
    run = pytest_in(unrelated, "-v", env={"HYPOTHESIS_PROFILE": "ci"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    assert "nanolm-verify:" not in run.stdout  # no header (pytest's own plugin list names the package, that's all)
    traced = pytest_in(unrelated, "--trace-config", "-q", env={"HYPOTHESIS_PROFILE": "ci"}).stdout
    assert "properties.entry.plugin" in traced or "properties/entry/plugin.py" in traced  # loaded all along


def test_pytest_profiling_and_the_plugin_work_side_by_side(unrelated):
    pytest.importorskip("pytest_profiling")
    run = pytest_in(unrelated, "--profile", env={"HYPOTHESIS_PROFILE": "ci"})  # pytest-profiling's own option
    assert run.returncode == 0, run.stdout + run.stderr
    assert (unrelated / "prof" / "combined.prof").is_file()
    laws = pytest_in(unrelated, "--profile", *ONE, "--impl", "torch", "--nanolm-profile", "ci")
    assert laws.returncode == 0, laws.stdout + laws.stderr
    assert "nanolm-verify: implementation torch, law profile ci" in laws.stdout
    assert "1 passed" in laws.stdout


def test_the_plugin_registers_no_hypothesis_profile(tmp_path):
    (tmp_path / "test_profiles.py").write_text(
        "import pytest\nfrom hypothesis import settings\nfrom hypothesis.errors import InvalidArgument\n\n"
        "@pytest.mark.parametrize('name', ['dev', 'thorough'])\n"
        "def test_no_profile_of_the_suite_is_registered(name):\n"
        "    with pytest.raises(InvalidArgument):\n        settings.get_profile(name)\n\n"
        "def test_ci_is_hypothesis_own_profile():\n"  # Hypothesis ships a 'ci' profile of its own (100 examples)
        "    assert settings.get_profile('ci').max_examples != 8 and settings().max_examples != 8\n"
    )
    run = pytest_in(tmp_path, env={"HYPOTHESIS_PROFILE": "ci"})
    assert run.returncode == 0 and "3 passed" in run.stdout, run.stdout + run.stderr


def test_the_conformance_tests_run_from_an_empty_directory_with_a_repro_line_that_works_there(tmp_path):
    run = pytest_in(tmp_path, *ONE, "--impl", WRONG, "--nanolm-profile", "ci")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"nanolm-verify: implementation {WRONG}, law profile ci" in run.stdout
    [line] = set(re.findall(r"^reproduce: (pytest .*)$", run.stdout, re.M))  # twice where $CI is set: pytest
    # then prints the whole failure message again in its short summary
    assert "--pyargs 'properties.conformance.test_laws::test_law[RMSNorm.rmsnorm_matches_golden-fp32-cpu]'" in line
    again = pytest_in(tmp_path, *shlex.split(line)[1:])
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout
    assert f"reproduce: {line}" in again.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written where the user stands


def test_a_repro_line_inside_the_invocation_directory_names_the_file(tmp_path):
    here = Path(__file__).resolve().parents[2]
    run = pytest_in(
        here, "tests/conformance/test_laws.py", "-k", f"{LAW}-fp32-cpu",
        "--impl", WRONG, "--nanolm-profile", "dev", "--hypothesis-seed", "3",
    )  # fmt: skip
    [line] = set(re.findall(r"^reproduce: (pytest .*)$", run.stdout, re.M))
    assert line.startswith("pytest 'tests/conformance/test_laws.py::test_law[RMSNorm.rmsnorm_matches_golden-fp32-cpu]'")
    assert "--nanolm-profile dev" in line and "--hypothesis-seed=3" in line


def test_a_user_expectation_file_turns_the_failure_into_xfail_and_a_stale_line_into_a_warning(tmp_path):
    mine = tmp_path / "mine.txt"
    mine.write_text(
        f"{LAW}[fp32]          xfail  eps outside the square root, on purpose\n"
        "RMSNorm.renamed_law   xfail  a line left over from an old version\n"
    )
    options = ["--impl", WRONG, "--nanolm-profile", "ci", "--nanolm-expectations", str(mine), "-rxX"]
    run = pytest_in(tmp_path, *ONE, *options)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 xfailed" in run.stdout
    assert "eps outside the square root, on purpose" in run.stdout
    assert "mine.txt:2: expectation RMSNorm.renamed_law[*-*] matches no known law id" in run.stdout


def test_a_hypothesis_profile_of_the_user_sets_the_laws_budget(tmp_path):
    (tmp_path / "conftest.py").write_text(
        "from hypothesis import settings\nsettings.register_profile('few', max_examples=3, derandomize=True)\n"
    )
    run = pytest_in(tmp_path, *ONE, "--impl", "torch", "--hypothesis-profile", "few")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "law profile hypothesis:few" in run.stdout


def test_a_hypothesis_profile_maps_onto_a_law_profile():
    settings.register_profile("nanolm-test-map", max_examples=1200, derandomize=True, print_blob=True)
    mapped = plugin.mapped_profile("nanolm-test-map")
    assert (mapped.name, mapped.max_examples, mapped.derandomize, mapped.print_blob) == (
        "hypothesis:nanolm-test-map", 1200, True, True,
    )  # fmt: skip
    assert mapped.slow  # ≥ 1000 examples draws the large-D tier, as thorough does
    assert mapped.timeout == profiles.PROFILES["dev"].timeout


def test_an_installed_copy_finds_its_tests_by_module_name():
    """``--pyargs properties.conformance`` resolves to the package's own directory, wherever it is installed."""
    import properties.conformance

    here = Path(properties.conformance.__file__).parent
    assert {p.name for p in here.glob("test_*.py")} == {"test_laws.py", "test_modules.py"}


def test_under_xdist_the_header_and_the_cuda_line_come_with_the_summary(tmp_path):
    pytest.importorskip("xdist")
    import torch

    both = [*ONE[:3], f"{LAW}-fp32"]  # the CPU test and the CUDA one
    run = pytest_in(tmp_path, *both, "--impl", "torch", "--nanolm-profile", "ci", "-n", "2", xdist=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "nanolm-verify: implementation torch, law profile ci (1 law test)" in run.stdout
    if not torch.cuda.is_available():  # the workers left it out; the controller says so, once
        assert run.stdout.count("nanolm-verify: 1 CUDA law test left out (no CUDA; -m nanolm_cuda adds them)") == 1


# ---------------------------------------------------------------------------------------------- costs nothing unused

HEAVY = ("torch", "hypothesis", "numpy", "golden", "properties.running.runner", "properties.library.laws")

REPORT_IMPORTS = f"""
import sys

def pytest_terminal_summary(terminalreporter):
    heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)
    terminalreporter.write_line(f"heavy modules: {{heavy}}")
"""


def test_importing_the_plugin_imports_neither_torch_nor_hypothesis():
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import properties.entry.plugin"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "properties.entry.plugin" in imported
    assert sorted(m for m in imported if m.split(".")[0] in ("torch", "hypothesis", "numpy", "golden")) == []


def test_a_project_that_runs_no_law_imports_nothing_more_with_the_plugin_than_without(tmp_path):
    (tmp_path / "conftest.py").write_text(REPORT_IMPORTS)
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    without = pytest_in(tmp_path, "-p", "no:nanolm_verify")
    with_plugin = pytest_in(tmp_path, "--trace-config")
    assert without.returncode == with_plugin.returncode == 0, with_plugin.stdout
    assert "properties/entry/plugin.py" in with_plugin.stdout or "properties.entry.plugin" in with_plugin.stdout
    [baseline] = re.findall(r"^heavy modules: (.*)$", without.stdout, re.M)
    [loaded] = re.findall(r"^heavy modules: (.*)$", with_plugin.stdout, re.M)
    assert loaded == baseline  # (pytest's own plugins import none of them either: [])


# ---------------------------------------------------------------------------------------------- no side effects

USER_DRAWS = """
import torch
from hypothesis import given, settings, strategies as st

SEEN = []


def test_a_law_first(nanolm_law_runner):
    nanolm_law_runner("RMSNorm.rmsnorm_matches_golden", torch.float32)


@settings(max_examples=10, database=None)
@given(st.integers())
def test_my_own_property(n):
    SEEN.append(torch.rand(()).item())


def test_my_draws_differ_across_examples():
    assert len(SEEN) == 10 and len(set(SEEN)) == 10, SEEN
"""


def test_after_a_law_a_users_given_test_draws_different_torch_numbers_in_each_example(tmp_path):
    (tmp_path / "test_user.py").write_text(USER_DRAWS)
    run = pytest_in(tmp_path, "--impl", "torch", "--nanolm-profile", "ci", "-p", "no:randomly")
    assert run.returncode == 0 and "3 passed" in run.stdout, run.stdout + run.stderr


# ---------------------------------------------------------------------------------------------- pytest's outcomes


def test_an_expectation_for_a_law_that_passes_is_xpass_and_fails_the_session_under_xfail_strict(tmp_path):
    mine = tmp_path / "mine.txt"
    mine.write_text(f"{LAW}[fp32]   xfail  fixed upstream, line not yet removed\n")
    options = [*ONE, "--impl", "torch", "--nanolm-profile", "ci", "--nanolm-expectations", str(mine), "-rX"]
    lenient = pytest_in(tmp_path, *options)
    assert lenient.returncode == 0 and "1 xpassed" in lenient.stdout, lenient.stdout
    assert "fixed upstream, line not yet removed" in lenient.stdout  # XPASS shows the reason
    strict = pytest_in(tmp_path, *options, "-o", "xfail_strict=true")
    assert strict.returncode == 1 and "1 failed" in strict.stdout, strict.stdout
    assert "[XPASS(strict)] expected failure" in strict.stdout


def test_an_expectation_line_may_be_the_node_id_pytest_printed(tmp_path):
    first = pytest_in(tmp_path, *ONE, "--impl", WRONG, "--nanolm-profile", "ci", "-rf")
    assert first.returncode == 1, first.stdout
    [node] = re.findall(r"^FAILED (\S+) - ", first.stdout, re.M)
    mine = tmp_path / "mine.txt"
    mine.write_text(f"{node}   xfail  copied from pytest's summary\n")
    again = pytest_in(tmp_path, *ONE, "--impl", WRONG, "--nanolm-profile", "ci", "--nanolm-expectations", str(mine))
    assert again.returncode == 0 and "1 xfailed" in again.stdout, again.stdout
    assert "matches no known law" not in again.stdout


SLOW = """
import time

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        time.sleep(120)
        return super().forward(x)
"""


def test_a_pytest_timeout_inside_a_law_is_pytests_and_never_blamed_on_the_implementation(tmp_path):
    pytest.importorskip("pytest_timeout")
    (tmp_path / "slow.py").write_text(SLOW)
    # 30 s: the limit covers the test's set-up, which starts the implementation's process (fork server imports)
    run = pytest_in(tmp_path, *ONE, "--impl", str(tmp_path / "slow.py"), "--nanolm-profile", "ci", "--timeout", "30")
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout + run.stderr
    assert "Timeout (>30.0s) from pytest-timeout" in run.stdout
    blame = [line for line in run.stdout.splitlines() if re.search(r"RMSNorm raised|cause: crash|LawFailed", line)]
    assert blame == [], run.stdout


def test_a_subject_that_calls_pytest_skip_itself_is_still_a_crash_of_the_subject(tmp_path):
    hostile = Path(__file__).parents[1] / "hostile" / "skips_in_forward.py"
    run = pytest_in(tmp_path, *ONE, "--impl", str(hostile), "--nanolm-profile", "ci")
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout
    assert "raised Skipped: not today" in run.stdout and "cause: crash" in run.stdout


# ---------------------------------------------------------------------------------------------- messages


def test_law_failures_fit_80_columns_with_one_summary_line_each_and_cuda_laws_left_out(tmp_path):
    selection = ["--pyargs", "properties.conformance.test_laws", "-k", "rmsnorm and fp32"]  # CPU and CUDA tests
    # pytest prints a short-summary line whole only in CI (env CI) or under -vv; elsewhere it cuts it to the width
    env = {"COLUMNS": "80", "CI": "true"}
    run = pytest_in(tmp_path, *selection, "--impl", WRONG, "--nanolm-profile", "ci", "-rf", env=env)
    assert run.returncode == 1, run.stdout
    failures = run.stdout.split(" FAILURES ")[1].split(" short test summary info ")[0].splitlines()
    assert len([line for line in failures if line.startswith("RMSNorm.")]) >= 5  # several laws fail
    assert [line for line in failures if len(line) > 80 and not line.startswith("reproduce: ")] == []
    assert not re.search(r"examples? ?\(s\)|after 1 examples", run.stdout)
    summary = [line for line in run.stdout.splitlines() if line.startswith("FAILED ")]
    assert summary and all(" — reproduce: pytest --pyargs " in line for line in summary)  # one line each
    import torch

    if not torch.cuda.is_available():
        assert re.search(r"^nanolm-verify: \d+ CUDA law tests? left out \(no CUDA; -m nanolm_cuda", run.stdout, re.M)
        assert "cuda]" not in run.stdout.replace("-cuda", "")  # none ran (or skipped)


def test_junit_properties_give_the_headroom_first_and_the_element_of_the_max_ulp(tmp_path):
    report = tmp_path / "out" / "junit.xml"
    run = pytest_in(tmp_path, *ONE, "--impl", "torch", "--nanolm-profile", "ci", f"--junitxml={report}")
    assert run.returncode == 0, run.stdout
    [case] = ET.parse(report).getroot().iter("testcase")
    names = [p.get("name") for p in case.iter("property")]
    assert names[0] == "nanolm_headroom" and float(case.find("properties")[0].get("value")) <= 1
    assert {"nanolm_headroom_bound_ulps", "nanolm_max_ulp", "nanolm_max_ulp_at"} <= set(names)
    at = {p.get("name"): p.get("value") for p in case.iter("property")}["nanolm_max_ulp_at"]
    assert re.match(r"index \(\d+(, \d+)*\): golden \S+, actual \S+", at), at


def test_the_impl_options_help_names_the_loaders_environment_variable():
    from properties.running import loading

    assert plugin.IMPL_ENV == loading.ENV_VAR
