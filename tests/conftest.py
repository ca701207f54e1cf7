"""Numerics set-up for the test suite: Hypothesis profiles (HYPOTHESIS_PROFILE / --profile, via the
nanolm_verify plugin), one torch thread (the laws use small tensors: threads only add contention on a
loaded 2-core machine), TF32 off on CUDA so fp32 means fp32."""

from __future__ import annotations

import pytest
import torch


def pytest_configure(config: pytest.Config) -> None:
    torch.set_num_threads(1)
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests (20-seed runs, D up to 8192) run only when selected with ``-m slow``."""
    if "slow" in (config.getoption("markexpr", default="") or ""):
        return
    skip = pytest.mark.skip(reason="slow: select with -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
