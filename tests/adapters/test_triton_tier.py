"""The interpreted Triton tier runs somewhere: .ci/run runs tox -e triton's commands, after the slow tier, with the
triton extra installed only then (the steps before it run without Triton, as a user without the extra would)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_triton_tier_as_tox_does():
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    assert "triton" in [e.strip() for e in tox["tox"]["envlist"].split(",")]
    assert "triton" in tox["testenv:triton"]["extras"].split()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [c.strip() for c in tox["testenv:triton"]["commands"].splitlines() if c.strip()]
    assert any(" -m triton" in c for c in commands)
    for command in commands:
        command = re.sub(r" --json \S+| \{posargs\}", "", command)
        command = re.sub(r"^(python|nanolm-verify)", r".venv/bin/\1", command)
        assert command in ci, f".ci/run lacks tox -e triton's {command!r}"
    install = ci.index('-e ".[test,triton]"')
    assert ci.index(" -m slow") < install < ci.index(" -m triton")
