"""The laws as plain Hypothesis tests, for a fuzzing engine to drive (``nanolm-verify fuzz``; HypoFuzz).

Not collected by ordinary test runs (its name does not start with ``test_``): ``fuzz`` passes this file to
``hypothesis fuzz`` explicitly, with the implementation (``NANOLM_IMPL``), the example database
(``NANOLM_FUZZ_DATABASE``: a directory or a redis:// URL) and the selected laws (``NANOLM_FUZZ_LAWS``, ids
separated by commas; ``NANOLM_FUZZ_DTYPES``). One test per law × dtype, each wrapping the law's inner test
exactly as the runner does, so the database key of a law is the same here and in ``check --database``: what the
fuzzer finds, the next ``check`` replays first. With ``NANOLM_FUZZ_TALLY`` (a directory; ``fuzz --examples``)
each process keeps ``<pid>.json`` there, ``{"<law id>[<dtype>]": [examples run, finished]}`` — finished: the
law failed (its failure already in the database: written when the next example starts) or skipped. The
database becomes the default of a profile loaded here — this module runs only inside the fuzzer's own
processes, never in a user's test session.
"""

from __future__ import annotations

import functools
import json
import os
import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis.internal.conjecture.data import ConjectureResult

from golden.formats import fmt
from properties.running import databases
from properties.running.loading import load
from properties.running.runner import LAWS

if not hasattr(ConjectureResult, "slice_comments"):  # HypoFuzz 25.11 reads the name Hypothesis ≥ 6.15x calls
    ConjectureResult.slice_comments = property(lambda self: self.span_comments)  # span_comments: without it, a
    # fuzzing process dies at its first failure, right after shrinking it (the shrunk input is never stored)

IMPL = load(os.environ.get("NANOLM_IMPL", "nanolm_core"))
settings.register_profile(  # explicit derandomize: Hypothesis' own "ci" profile (loaded when $CI is set) sets it,
    "nanolm-fuzz",  # and the fuzzer skips a derandomized test
    database=databases.open(os.environ["NANOLM_FUZZ_DATABASE"]),
    derandomize=False,
    deadline=None,
    print_blob=False,
)
settings.load_profile("nanolm-fuzz")
_LAWS = [s for s in os.environ.get("NANOLM_FUZZ_LAWS", "").split(",") if s]
_DTYPES = [fmt(s).name for s in os.environ.get("NANOLM_FUZZ_DTYPES", "").split(",") if s]


_TALLY = os.environ.get("NANOLM_FUZZ_TALLY")
_COUNTS: dict[str, list[int]] = {}  # "<law id>[<dtype>]" → [examples run, finished] in this process


def _tally(key: str | None = None, finished: bool = False) -> None:
    """Write this process's counts (``fuzz --examples`` reads them), atomically."""
    if _TALLY:
        if key is not None and finished:
            _COUNTS[key][1] = 1
        path = Path(_TALLY) / f"{os.getpid()}.json"
        path.with_suffix(".tmp").write_text(json.dumps(_COUNTS))
        path.with_suffix(".tmp").replace(path)


def _test(law: Any) -> Callable[..., None]:
    body = law.body
    failed: set[str] = set()

    def counted(impl: Any, dtype: Any, device: Any, data: Any) -> Any:  # the runner's wrapper, same digest
        key = f"{law.id}[{fmt(dtype).name}]"
        _tally(key, finished=key in failed)  # a failure counts once HypoFuzz has stored it: at the next example
        try:
            return body(impl, dtype, device, data)
        except (unittest.SkipTest, pytest.skip.Exception):
            _tally(key, finished=True)  # HypoFuzz runs a skipped law no more
            raise
        except (UnsatisfiedAssumption, StopTest):
            raise  # Hypothesis' own control flow, no verdict
        except BaseException:
            failed.add(key)
            raise
        finally:
            _COUNTS[key][0] += 1

    functools.update_wrapper(counted, body)
    return given(data=st.data())(counted)


for _law in LAWS.values():
    if not _law.uses_hypothesis or (_LAWS and _law.id not in _LAWS) or _law.component not in (*IMPL.provided, "Module"):
        continue
    for _dtype in (fmt(d).name for d in _law.dtypes):
        if not _DTYPES or _dtype in _DTYPES:
            globals()[f"test_{_law.component}_{_law.name}_{_dtype}"] = _test(_law)
            _COUNTS[f"{_law.id}[{_dtype}]"] = [0, 0]
_tally()  # every test of the campaign, before its first example


@pytest.fixture
def impl() -> Any:
    return IMPL


@pytest.fixture
def dtype(request: pytest.FixtureRequest) -> Any:
    return fmt(request.node.name.rsplit("_", 1)[-1]).dtype  # test_<Component>_<law>_<dtype>


@pytest.fixture
def device() -> str:
    return "cpu"
