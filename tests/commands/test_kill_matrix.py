"""Proof of power that can fail: each entry of the catalogue (properties.gallery.PITFALLS) is caught by its
designated law in the ci profile — by the law's own assertion (cause "law"), never by a crash, a contract
failure or a timeout of the wrong implementation — and the reference passes that law in that dtype. Every law
has a wrong implementation designated to it.

``found_after`` (examples until the first failure) is printed with ``-s`` and recorded as a user property
(``--junitxml``). The check itself is tested: a wrong implementation with a typo (its forward raises
``AttributeError``) fails it.
"""

from __future__ import annotations

import argparse
import io
import sys
import textwrap

import pytest

from properties.commands import teach
from properties.commands.teach import demonstrate_pitfall
from properties.gallery import PITFALLS, Pitfall
from properties.running.devices import accelerators
from properties.running.loading import load
from properties.running.runner import LAWS, run_law
from properties.running.session import RunOptions
from tests.common.proofs import assert_caught

DESIGNATED = sorted({(p.law, p.dtype) for p in PITFALLS.values()})


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.triton] if p.requires == "triton" else []) for n, p in PITFALLS.items()]
)
def test_entry_is_caught_by_its_designated_law(name, record_property):
    pitfall = PITFALLS[name]
    if pitfall.missing:  # written in a package not installed here (the Triton entries: tox -e triton)
        pytest.skip(pitfall.missing)
    # a Triton entry runs in a worker, where the kernels are interpreted (never in this process): --triton auto
    options = RunOptions.of("ci", workers=1) if pitfall.requires == "triton" else None
    demo = teach.demonstrate_all([pitfall], profile="ci", options=options)[0]
    record_property("found_after", demo.result.found_after)
    record_property("outcome", demo.outcome)
    print(f"{name}: {demo.pitfall.law} [{demo.pitfall.dtype}] {demo.outcome} after {demo.result.found_after}")
    if demo.pitfall.pending:
        if demo.caught:
            pytest.fail(f"{name} is caught by {demo.pitfall.law} now: clear its pending note in PITFALLS")
        pytest.xfail(f"known gap ({demo.outcome}): {demo.pitfall.pending}")
    assert_caught(demo)


@pytest.mark.parametrize(("law_id", "dtype"), DESIGNATED, ids=[f"{law}-{dt}" for law, dt in DESIGNATED])
def test_reference_passes_each_designated_law(law_id, dtype):
    device = "cpu"
    if "accelerator" in LAWS[law_id].tags:  # compares an accelerator with the CPU: on the first one present
        if not accelerators():
            pytest.skip("needs an accelerator: the law compares a device with the CPU")
        device = accelerators()[0]
    result = run_law(LAWS[law_id], load("nanolm_core"), dtype=dtype, device=device, profile="ci")
    assert result.status == "passed", f"nanolm_core should pass {law_id} in {dtype}: {result.status}: {result.message}"


@pytest.mark.parametrize("law_id", list(LAWS))
def test_every_law_has_a_wrong_implementation_designated_to_it(law_id):
    designated = [name for name, p in PITFALLS.items() if p.law == law_id]
    assert designated, f"no entry of properties.gallery.PITFALLS is designated to {law_id}"
    if all(PITFALLS[name].pending for name in designated):
        pytest.xfail(f"{law_id} is proven against no entry yet: {PITFALLS[designated[0]].pending}")


# ------------------------------------------------------------------------------ the check can fail

TYPO = '''
    """A wrong implementation with a typo: every call raises AttributeError."""

    import nanolm_core


    class RMSNorm(nanolm_core.RMSNorm):
        def forward(self, x):
            return super().forward(x) * self.wieght  # "weight", misspelt
'''


@pytest.fixture
def typo(tmp_path, monkeypatch) -> Pitfall:
    """A catalogue entry whose module (importable as ``typo_rmsnorm``) crashes instead of being wrong."""
    (tmp_path / "typo_rmsnorm.py").write_text(textwrap.dedent(TYPO))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "typo_rmsnorm", raising=False)
    return Pitfall("typo_rmsnorm", "RMSNorm.rmsnorm_does_not_center", "fp32", "test-only", "a typo in forward")


def test_a_crashing_wrong_implementation_fails_the_meta_check(typo):
    demo = demonstrate_pitfall(typo, profile="ci")
    assert (demo.result.status, demo.result.cause) == ("failed", "crash")  # the law "failed" — by a crash
    assert not demo.caught and demo.outcome == "failed (cause crash)"
    with pytest.raises(AssertionError, match=r"cause 'law'.*failed \(cause crash\)"):
        assert_caught(demo)


def test_pitfalls_cli_reports_a_crash_as_not_caught(typo, monkeypatch):
    monkeypatch.setitem(PITFALLS, "mean_subtraction", typo)
    parser = argparse.ArgumentParser(prog="nanolm-verify")
    teach.register(parser.add_subparsers(dest="command"))
    out = io.StringIO()
    assert teach._run(parser.parse_args(["pitfalls", "mean_subtraction", "--profile", "ci"]), out) == 1
    text = out.getvalue()
    assert "✘ NOT CAUGHT" in text and "cause crash" in text and "✔ CAUGHT" not in text
    assert max(map(len, text.splitlines())) <= 80
