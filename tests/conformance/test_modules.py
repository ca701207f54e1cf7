"""Proof that each of the course's named tests (``properties/conformance/test_modules.py``, collected where the
course puts them: ``tests/test_modules.py``) has power: every catalogue entry designated to the law a course test
runs (``properties.gallery.PITFALLS``, the one bug → law table) fails that law by the law's own assertion — cause
"law"; a wrong implementation that merely crashes is no catch (``tests/common/proofs.py``).
"""

import pytest

from properties.commands.teach import demonstrate_pitfall
from properties.conformance import test_modules as course  # a module: its test classes are collected elsewhere
from properties.gallery import PITFALLS
from properties.running.runner import LAWS
from tests.common.proofs import assert_caught

PROOFS = [
    pytest.param(PITFALLS[name], id=f"{course_test}-{name}")
    for course_test, law_id in course.COURSE.items()
    for name, entry in PITFALLS.items()
    if entry.law == law_id and not entry.pending and not entry.requires  # in this process: the kill matrix runs
]  # the entries written in Triton, in workers that interpret their kernels


@pytest.mark.parametrize("entry", PROOFS)
def test_each_course_test_fails_on_every_entry_designated_to_its_law(entry):
    assert_caught(demonstrate_pitfall(entry, profile="ci"))


def test_every_course_test_runs_a_law_with_an_entry_it_must_catch():
    """No course test without a proof of power: its law has a catalogue entry that is not a known gap."""
    proven = {entry.law for entry in PITFALLS.values() if not entry.pending}
    unproven = [name for name, law_id in course.COURSE.items() if law_id not in proven]
    assert not unproven, f"course tests whose law no catalogue entry proves: {unproven}"


def test_every_course_test_runs_a_law_in_every_dtype_of_that_law():
    """No course test is parametrized over a dtype its law does not define (such a test could only skip)."""
    for name, law_id in course.COURSE.items():
        cls = next(c for c in (course.TestRMSNorm, course.TestSwiGLU, course.TestAddRMSNorm) if hasattr(c, name))
        marks = getattr(cls, name)
        (param,) = [m for m in marks.pytestmark if m.name == "parametrize"]
        assert [p.values[0] for p in param.args[1]] == list(LAWS[law_id].dtypes), name
