"""The interpreted Triton tier runs somewhere: .ci/run runs tox -e triton's tests (the marked ones; the interpreted
checks of liger and fla, 5–11 minutes on two shared cores, are tox -e triton's alone), after the slow tier, with the
triton extra installed only then (the steps before it run without Triton, as a user without the extra would)."""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_triton_tier_as_tox_does():
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    assert "triton" in [e.strip() for e in tox["tox"]["envlist"].split(",")]
    assert "triton" in tox["testenv:triton"]["extras"].split()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [c.strip() for c in tox["testenv:triton"]["commands"].splitlines() if c.strip()]
    [tests] = [c for c in commands if " -m triton" in c]
    assert tests.replace(" {posargs}", "").replace("python", ".venv/bin/python") in ci
    assert {"liger", "fla"} <= {c.split()[2] for c in commands if c.startswith("nanolm-verify check")}
    install = ci.index('-e ".[test,triton]"')
    assert ci.index(" -m slow") < install < ci.index(" -m triton")
