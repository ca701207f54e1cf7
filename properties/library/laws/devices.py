"""Laws across devices: on every accelerator present, each component agrees with itself on the CPU.

They run on a non-CPU device only (tag "accelerator"): the same inputs and weights, once on the device and once
on the CPU, each output within its own derived bound of one golden value, so they differ by at most the sum.
"""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from properties.library import strategies as S
from properties.library.assertions import assert_close
from properties.library.harness import block_forward, note, rmsnorm_forward, swiglu_forward
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

DType = torch.dtype
Data = st.DataObject


@law("RMSNorm", tags=("accelerator",))
@given(data=st.data())
def rmsnorm_agrees_with_the_cpu(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """On an accelerator, |f_device(x) − f_cpu(x)| ≤ 2·bounds.rmsnorm (both within their bound of one golden)."""
    c = data.draw(S.rmsnorm_cases(dtype), label="case")
    note(c)
    here, cpu = (rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, d) for d in (device, "cpu"))
    b = bounds.between(bounds.rmsnorm(c.x, c.weight, c.eps, dtype))
    assert_close(here, cpu, b, what=f"{device} vs cpu", expected_name="cpu")


@law("SwiGLU", tags=("accelerator",))
@given(data=st.data())
def swiglu_agrees_with_the_cpu(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """On an accelerator, |f_device(x) − f_cpu(x)| ≤ 2·bounds.swiglu (both within their bound of one golden)."""
    c = data.draw(S.swiglu_cases(dtype), label="case")
    note(c)
    here, cpu = (swiglu_forward(impl, c.x, c.params, dtype, d) for d in (device, "cpu"))
    b = bounds.between(bounds.swiglu(c.x, c.w_gate, c.w_up, c.w_down, dtype, random_weights=True))
    assert_close(here, cpu, b, what=f"{device} vs cpu", expected_name="cpu")


@law("Block", tags=("accelerator",))
@given(data=st.data())
def block_agrees_with_the_cpu(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """On an accelerator, |f_device(x) − f_cpu(x)| ≤ 2·bounds.block (both within their bound of one golden)."""
    c = data.draw(S.block_cases(dtype), label="case")
    note(c)
    here, cpu = (block_forward(impl, c.x, c.config, c.params, dtype, d) for d in (device, "cpu"))
    b = bounds.between(bounds.block(c.x, c.params, c.config, dtype, random_weights=True))
    assert_close(here, cpu, b, what=f"{device} vs cpu", expected_name="cpu")
