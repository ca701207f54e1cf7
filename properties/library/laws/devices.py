"""Laws across devices: on every accelerator present, each component agrees with itself on the CPU.

One generic family (``families``), one law per component record: ``<Component>.<component>_agrees_with_the_cpu``.
They run on a non-CPU device only (tag "accelerator"): the same inputs and weights, once on the device and once on
the CPU, each output within its own derived bound of one golden value, so they differ by at most the sum.
"""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from properties.library import components
from properties.library.assertions import assert_close
from properties.library.families import family, named
from properties.library.harness import note
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

DType = torch.dtype
Data = st.DataObject


@family("devices", axis="devices: every accelerator against the CPU")
def _devices(rec: components.Component) -> tuple[str, ...]:
    def agrees_with_the_cpu(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
        c = rec.as_case(data.draw(rec.cases(dtype), label="case"))
        note(c)
        here, cpu = (rec.forward(impl, c, dtype, d) for d in (device, "cpu"))
        for name, a, b, bound in zip(rec.outputs, here, cpu, rec.bounds(c, dtype, random_weights=True), strict=True):
            assert_close(a, b, bounds.between(bound), what=f"{name}: {device} vs cpu", expected_name="cpu")

    statement = (
        f"On an accelerator, |f_device − f_cpu| ≤ 2·bound for every output of {rec.name} (both within their bound "
        "of one golden value)."
    )
    fn = named(agrees_with_the_cpu, f"{rec.snake}_agrees_with_the_cpu", statement)
    law(rec.name, tags=("accelerator",))(given(data=st.data())(fn))
    return (f"{rec.name}.{fn.__name__}",)
