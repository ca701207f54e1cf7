"""The subject's exceptions as the judge sees them across the process boundary: an exception named after a built-in
one is that built-in exception (and a RemoteError), so a law catches it as it would in one process — found by the
dev seed sweep, where HF's modules (classes defined in a function) do not pickle and torch's CPU attention has no
double backward: both were the laws' documented outcomes in one process and suite errors or crashes across it."""

from __future__ import annotations

import builtins
import json
import textwrap
from pathlib import Path

import pytest

from properties.entry.cli import main
from properties.library.remote import RemoteError, raised


@pytest.mark.parametrize("name", ["RuntimeError", "AttributeError", "TypeError", "ValueError", "KeyError"])
def test_a_built_in_exception_keeps_its_class(name):
    exc = raised(name, "from the subject")
    assert isinstance(exc, RemoteError) and isinstance(exc, getattr(builtins, name))
    assert exc.remote_type == name and exc.args == ("from the subject",)


@pytest.mark.parametrize("name", ["AssertionError", "SystemExit", "KeyboardInterrupt", "StopIteration", "Weird"])
def test_a_verdict_or_an_exit_never_crosses_as_itself(name):
    """The judge's own failures are assertions and its exits are its own: a subject's are a RemoteError only."""
    exc = raised(name, "from the subject")
    assert type(exc).__mro__[1:] == (RemoteError, Exception, BaseException, object)
    assert not isinstance(exc, (AssertionError, SystemExit, KeyboardInterrupt, StopIteration))


def test_a_module_that_does_not_pickle_is_measured_not_a_suite_error(tmp_path: Path):
    """The lifecycle law pickles the module where it pickles at all: a class defined in a function does not (the
    subject's pickle raises AttributeError), which the law measures — through the boundary as in one process."""
    impl = tmp_path / "local_class.py"
    impl.write_text(
        textwrap.dedent("""
        import nanolm_core

        def _make():
            class RMSNorm(nanolm_core.RMSNorm):  # local: pickle cannot find it by name
                pass
            return RMSNorm

        RMSNorm = _make()
    """)
    )
    report = tmp_path / "r.json"
    law = "RMSNorm.rmsnorm_survives_copies_moves_and_to_empty"
    status = main(["check", str(impl), "--profile", "ci", "--only", law, "-q", "--json", str(report)])
    (result,) = json.loads(report.read_text())["results"]
    assert (status, result["status"]) == (0, "passed"), result["message"]
    assert "not picklable: AttributeError" in json.dumps(result["measurements"])
