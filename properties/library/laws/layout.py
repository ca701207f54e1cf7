"""Laws of memory layout: a component's result depends on the values it is given, not on how they are laid out.

One generic family (``families``), one law per component record: ``<Component>.<component>_ignores_memory_layout``.

Real callers hand kernels views: the transposed output of another op, a slice of a fused qkv or gate/up buffer
(``torch.split``), a broadcast (``expand``) row, a row-slice at a storage offset, every other row. Each law runs
the component with *every input* in every layout of ``strategies.LAYOUTS`` in every example — each input in
another layout than the others in the same call (AddRMSNorm's residual is never laid out as its x is, so a kernel
that addresses one input with another's strides reads other values) — and with its parameters loaded from views
(1-D: at a storage offset; 2-D: transposed storage, a slice of a stacked buffer, alternately). The buffers around
a view hold NaN, so a kernel that reads outside the view sees NaN. Each call is compared with the same module
called on the same values made contiguous.

Not bitwise: a correct kernel may reduce a strided row in another order (the reference and torch do, for the
transposed layout: 1 ULP in fp32 at D = 64), so the two results are two results of one implementation, each
within its derived bound of one exact value: ``bounds.between(b)``, per output. A kernel that ignores a stride or
the storage offset reads other values, an error of order one (or NaN), far outside it. Whether the two results
are bitwise equal is measured (``bitwise (fraction of layouts, lowest example)``).
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from properties.library import components
from properties.library import strategies as S
from properties.library.assertions import assert_close
from properties.library.context import current, measure
from properties.library.families import family, named
from properties.library.harness import note
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

DType = torch.dtype
Data = st.DataObject

PARAM_LAYOUTS = ("transposed", "fused_slice")  # 2-D parameters, alternately; 1-D ones at a storage offset


def input_layouts(n_inputs: int, step: int) -> tuple[str, ...]:
    """The layouts of a call's inputs at ``step``: input k in LAYOUTS[(step + k) mod n] — over the steps each input
    takes every layout, and no two inputs of one call share one."""
    n = len(S.LAYOUTS)
    return tuple(S.LAYOUTS[(step + k) % n] for k in range(n_inputs))


def param_views(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The parameters as views: 1-D at a storage offset, 2-D alternately transposed and a slice of a stacked buffer."""
    out, k = {}, 0
    for name, w in params.items():
        if w.dim() == 2:
            layout, k = PARAM_LAYOUTS[k % len(PARAM_LAYOUTS)], k + 1
        else:
            layout = "offset"
        out[name] = S.weight_as_layout(w, layout)
    return out


def check_layouts(
    rec: components.Component, case: components.Case, module: torch.nn.Module, dtype: DType, device: str
) -> None:
    """module(views) vs module(contiguous copies of the views) for every step of :func:`input_layouts`, each output
    within between(its bound at the contiguous values) (the bound computed once per distinct set of values: an
    expanded input is its first row broadcast)."""
    __tracebackhide__ = True
    inputs = tuple(t.to(device) for t in case.inputs)
    same, cached = 0, {}
    for step in range(len(S.LAYOUTS)):
        layouts = input_layouts(len(inputs), step)
        views = tuple(S.as_layout(t, layout) for t, layout in zip(inputs, layouts, strict=True))
        dense = tuple(v.contiguous() for v in views)
        y_view, y_dense = (rec.call(module, given) for given in (views, dense))
        same += all(torch.equal(a, b) for a, b in zip(y_view, y_dense, strict=True))
        key = tuple(layout == "expanded" for layout in layouts)
        if key not in cached:
            values = tuple(t.cpu() for t in dense)
            cached[key] = [bounds.between(b) for b in rec.bounds(case, dtype, values, random_weights=True)]
        laid = ", ".join(f"{layout} {name}" for name, layout in zip(rec.inputs, layouts, strict=True))
        for name, a, b, bound in zip(rec.outputs, y_view, y_dense, cached[key], strict=True):
            assert_close(a, b, bound, what=f"{name} of {laid}", expected_name="f(contiguous copies)")
    ctx, label = current(), "bitwise (fraction of layouts, lowest example)"
    seen = ctx.recorder.measurements.get(label, 1.0) if ctx is not None else 1.0
    measure(label, min(seen, same / len(S.LAYOUTS)))


def _statement(rec: components.Component) -> str:
    inputs = " and ".join(rec.inputs)
    each = " (each input in another layout than the others in one call)" if len(rec.inputs) > 1 else ""
    return (
        f"f(views) = f(contiguous copies) within 2·bound, for every output, with transposed, fused-slice, expanded, "
        f"offset and strided views of {inputs}{each}, and the parameters loaded from views (1-D at a storage "
        f"offset, 2-D transposed or a slice of a stacked buffer): the values decide the result, not the strides."
    )


@family("layout", axis="memory layout of every input and parameter")
def _layout(rec: components.Component) -> tuple[str, ...]:
    def ignores_memory_layout(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
        c = rec.as_case(data.draw(rec.cases(dtype, min_rows=2, **rec.cheap), label="case"))
        note(c)
        module = rec.build(impl, c, dtype, device, params=param_views(c.params))
        check_layouts(rec, c, module, dtype, device)

    fn = named(ignores_memory_layout, f"{rec.snake}_ignores_memory_layout", _statement(rec))
    if rec.wide is not None:
        fn = example(data=S.Pin("wide rows", rec.wide))(fn)
    law(rec.name, cost=4)(given(data=st.data())(fn))
    return (f"{rec.name}.{fn.__name__}",)
