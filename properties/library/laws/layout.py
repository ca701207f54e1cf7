"""Laws of memory layout: a component's result depends on the values it is given, not on how they are laid out.

Real callers hand kernels views: the transposed output of another op, a slice of a fused qkv or gate/up buffer
(``torch.split``), a broadcast (``expand``) row, a row-slice at a storage offset, every other row. Each law
runs the component on every layout of ``strategies.LAYOUTS`` in every example (the buffers around a view hold
NaN, so a kernel that reads outside the view sees NaN) and compares with the same values made contiguous.

Not bitwise: a correct kernel may reduce a strided row in another order (the reference and torch do, for the
transposed layout: 1 ULP in fp32 at D = 64), so the two results are two results of one implementation, each
within its derived bound of one exact value: ``bounds.between(b)``. A kernel that ignores a stride or the
storage offset reads other values, an error of order one (or NaN), far outside it. Whether the two results
are bitwise equal is measured (``bitwise (fraction of layouts, lowest example)``).
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from properties.library import strategies as S
from properties.library.assertions import assert_close, assert_output_contract
from properties.library.context import current, measure
from properties.library.harness import build_block, build_rmsnorm, build_swiglu, call, note
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

DType = torch.dtype
Data = st.DataObject

# At least two rows, as (N,) or (B, T): a wrong row pitch shows only from the second row on.
_BATCH = st.integers(2, 5).map(lambda n: (n,)) | st.tuples(st.integers(1, 2), st.integers(2, 3))


@st.composite
def _rmsnorm_cases(draw: st.DrawFn, dtype: DType) -> S.RMSNormCase:
    return draw(S.rmsnorm_cases(dtype, batch=draw(_BATCH, label="batch shape")), label="case")


def _check_layouts(x: torch.Tensor, module: torch.nn.Module, component: str, bound_of, what: str) -> None:
    """module(view) vs module(view.contiguous()) for every layout, within between(bound_of(contiguous values))
    (one module for every call: the layouts are what changes; the bound of x computed once, of the broadcast once)."""
    same, b = 0, {}
    for layout in S.LAYOUTS:
        view = S.as_layout(x, layout)
        dense = view.contiguous()
        y_view, y_dense = (_checked_call(module, v, component) for v in (view, dense))
        same += bool(torch.equal(y_view, y_dense))
        key = "expanded" if layout == "expanded" else "x"
        if key not in b:
            b[key] = bounds.between(bound_of(dense.cpu()))
        assert_close(y_view, y_dense, b[key], what=f"{what} of a {layout} view", expected_name="f(contiguous copy)")
    ctx, name = current(), "bitwise (fraction of layouts, lowest example)"
    seen = ctx.recorder.measurements.get(name, 1.0) if ctx is not None else 1.0
    measure(name, min(seen, same / len(S.LAYOUTS)))


def _checked_call(module: torch.nn.Module, x: torch.Tensor, component: str) -> torch.Tensor:
    y = call(module, x, component=component)
    assert_output_contract(y, shape=tuple(x.shape), dtype=x.dtype, device=x.device, what=f"{component} output")
    return y


@law("RMSNorm", cost=4)
@given(data=st.data())
@example(data=S.RMSNORM_PINS["wide rows, D=512"])
def rmsnorm_ignores_memory_layout(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f(view) = f(contiguous copy) within 2·bound for transposed, fused-slice, expanded, offset and strided views
    of x, with γ loaded from a slice of a stacked buffer: the values decide the result, not the strides."""
    c = data.draw(_rmsnorm_cases(dtype), label="case")
    note(c)
    module = build_rmsnorm(impl, S.weight_as_layout(c.weight, "offset"), c.eps, dtype, device)
    _check_layouts(c.x.to(device), module, "RMSNorm", lambda xd: bounds.rmsnorm(xd, c.weight, c.eps, dtype), "y")


@law("SwiGLU", cost=4)
@given(data=st.data())
def swiglu_ignores_memory_layout(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """f(view) = f(contiguous copy) within 2·bound for transposed, fused-slice, expanded, offset and strided views
    of x, with W_gate loaded from transposed storage and W_up from a stacked gate/up buffer."""
    c = data.draw(S.swiglu_cases(dtype, max_dim=128, min_rows=2), label="case")
    note(c)
    params = {
        "w_gate.weight": S.weight_as_layout(c.w_gate, "transposed"),
        "w_up.weight": S.weight_as_layout(c.w_up, "fused_slice"),
        "w_down.weight": c.w_down,
    }
    module = build_swiglu(impl, params, dtype, device)
    bound_of = lambda xd: bounds.swiglu(xd, c.w_gate, c.w_up, c.w_down, dtype, random_weights=True)  # noqa: E731
    _check_layouts(c.x.to(device), module, "SwiGLU", bound_of, "y")


@law("Block", cost=4)
@given(data=st.data())
def block_ignores_memory_layout(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """out(view) = out(contiguous copy) within 2·bound for views of x (B, T, D): transposed storage (every stride
    reversed: feature-major), a slice of a fused buffer, a batch broadcast, a storage offset, every other token."""
    c = data.draw(S.block_cases(dtype, max_dim=32, max_tokens=4), label="case")
    if c.x.shape[0] * c.x.shape[1] < 2:
        c = c._replace(x=torch.cat([c.x, c.x.flip(-1)], dim=1))  # two tokens at least: a row pitch matters
    note(c)
    module = build_block(impl, c.config, c.params, dtype, device)
    bound_of = lambda xd: bounds.block(xd, c.params, c.config, dtype, random_weights=True)  # noqa: E731
    _check_layouts(c.x.to(device), module, "Block", bound_of, "out")
