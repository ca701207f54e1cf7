"""Numerics set-up for this repository's test suite: the suite's Hypothesis profiles for the plain ``@given``
tests (selected by ``--nanolm-profile`` or ``$HYPOTHESIS_PROFILE``, as the laws are; registered here, by this
project for its own tests — the installed plugin never does it in anyone's project), one torch thread (the laws
use small tensors: threads only add contention on a loaded 2-core machine), TF32 off on CUDA so fp32 means fp32."""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import settings

from properties.running import profiles


def pytest_configure(config: pytest.Config) -> None:
    torch.set_num_threads(1)
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    name = config.getoption("--nanolm-profile", default=None) or os.environ.get(profiles.ENV_VAR)
    if name in profiles.PROFILES and not config.getoption("hypothesis_profile", default=None):
        profiles.register()
        settings.load_profile(name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests (20-seed runs, D up to 8192) run only when selected with ``-m slow``."""
    if "slow" in (config.getoption("markexpr", default="") or ""):
        return
    skip = pytest.mark.skip(reason="slow: select with -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def corpus_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the packaged golden corpus, which the stored-golden laws read instead of the packaged one (a test
    may damage it)."""
    from golden import corpus
    from properties.library.laws import stored

    copy = tmp_path / "data"
    shutil.copytree(corpus.DATA_DIR, copy)
    monkeypatch.setattr(corpus, "cases", functools.partial(corpus.cases, data_dir=copy))
    stored._cases.cache_clear()
    yield copy
    stored._cases.cache_clear()
