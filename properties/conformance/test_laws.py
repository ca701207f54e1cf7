"""The law library as pytest tests: every law × dtype × device against the selected implementation.

    pytest --pyargs properties.conformance.test_laws --impl mypkg.norms -k "rmsnorm and bf16" --nanolm-profile ci

A law not defined for a dtype has no test; without a CUDA device the CUDA tests are not collected (the plugin
says how many were left out; ``-m nanolm_cuda`` collects them, to skip with the reason). The parameter id of a test
is ``expectations.param_id`` — what an expectation line may name it by.
"""

from __future__ import annotations

import pytest

from golden.formats import fmt
from properties.running.expectations import param_id
from properties.running.runner import DEVICES, LAWS


def _params() -> list:
    params = []
    for law in LAWS.values():
        for device in DEVICES:
            if "accelerator" in law.tags and device == "cpu":
                continue  # compares an accelerator with the CPU: no test on the CPU itself
            marks = [pytest.mark.nanolm_cuda] if device == "cuda" else []
            params += [
                pytest.param(law.id, dtype, device, id=param_id(law.id, fmt(dtype).name, device), marks=marks)
                for dtype in law.dtypes
            ]
    return params


@pytest.mark.parametrize(("law_id", "dtype", "device"), _params())
def test_law(nanolm_law_runner, law_id, dtype, device):
    nanolm_law_runner(law_id, dtype, device)
