"""The README's promises: its example implementation passes, and CI runs the README's test command."""

import configparser
import re
from pathlib import Path

from properties.entry.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_example_implementation_passes_check(tmp_path):
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    module = tmp_path / "readme_example.py"
    module.write_text(code)
    assert main(["check", str(module), "--profile", "ci", "--dtype", "fp32", "--dtype", "bf16", "-q"]) == 0


def test_examples_my_norms_passes_check():
    assert main(["check", str(ROOT / "examples" / "my_norms.py"), "--profile", "ci", "--dtype", "fp16", "-q"]) == 0


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(python3 -m venv .*?)\n```", README)
    assert len(commands) == 2, "the README gives a newcomer two commands: check the reference, run the tests"
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_ci_runs_the_slow_tier_as_tox_does_and_prints_the_slowest_tests():
    """Every tier runs somewhere: .ci/run runs the slow tier after the README's command, with tox -e slow's pytest
    command (tox -l lists it), and both print their 15 slowest tests."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    assert "slow" in [e.strip() for e in tox["tox"]["envlist"].split(",")]
    [slow] = [c.strip() for c in tox["testenv:slow"]["commands"].splitlines() if c.strip()]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert slow.replace(" --durations=15", "").replace(" {posargs}", "").replace("python", ".venv/bin/python") in ci
    assert "--durations=15" in slow and 'PYTEST_ADDOPTS="--durations=15' in ci
    assert ci.index(" -m slow") > ci.index(re.findall(r"```bash\n(python3 -m venv .*?)\n```", README)[1])
