"""Laws of a module's lifecycle: a module computes with the weights and options it has *now*, whatever it did before.

Real code calls a module, then reloads it (``load_state_dict``), updates its weights in place (an optimizer step:
``with torch.no_grad(): p.copy_(…)``), calls it again and again, on longer sequences, and keeps several instances
of different options (eps, rope_theta) and sizes alive in one process. A kernel that caches a derived quantity — a
weight cast, a fused weight buffer, RoPE cos/sin tables — at its first call, or in a class attribute shared by
every instance, computes with stale values from then on.

One generic family (``families``), one law per component record: ``<Component>.<component>_follows_its_module_
lifecycle``. Each example walks one module, a second instance of the same sizes with other constructor options
(``Component.other_options``: eps; the Block's rope_theta and eps) and a third of other sizes through such a life,
and compares *every* output of *every* call with the golden value for the parameters and options the module has at
that moment, within the component's derived bound (``Component.bounds``; the new parameters are random:
``strategies.fresh_params``). The oracle is golden, not a fresh module of the same implementation: a class-level
cache survives from one example to the next in a process, so a "fresh" module may already be stale. A record may
run the family in fewer dtypes, at a higher cost (``Component.limits["lifecycle"]``: the Block, fp32).
"""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from golden.formats import NAMES, fmt
from properties.library import components
from properties.library import strategies as S
from properties.library.assertions import assert_matches_golden
from properties.library.families import family, named
from properties.library.harness import note, reload, update_in_place
from properties.library.subject import Implementation
from properties.library.table import ALL_DTYPES, law

DType = torch.dtype
Data = st.DataObject


def doubled(inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """Every input with its rows (a sequence's tokens: the second-to-last dim) followed by the same rows reversed:
    twice the rows, a longer sequence (RoPE tables for new positions)."""
    return tuple(torch.cat([t, t.flip(-2)], dim=-2) for t in inputs)


class _Life:
    """One component's modules in one example: build them, and check a call against golden for a case."""

    def __init__(self, rec: components.Component, impl: Implementation, dtype: DType, device: str) -> None:
        self.rec, self.impl, self.dtype, self.device = rec, impl, dtype, device

    def build(self, case: components.Case) -> torch.nn.Module:
        __tracebackhide__ = True
        return self.rec.build(self.impl, case, self.dtype, self.device)

    def check(self, module: torch.nn.Module, case: components.Case, inputs: Any, when: str) -> None:
        """module(inputs): every output within its bound of golden for ``case``'s parameters and options."""
        __tracebackhide__ = True
        rec = self.rec
        outs = rec.call(module, tuple(t.to(self.device) for t in inputs))
        golds, bounds_ = rec.golden(case, inputs), rec.bounds(case, self.dtype, inputs, random_weights=True)
        for name, y, gold, bound in zip(rec.outputs, outs, golds, bounds_, strict=True):
            assert_matches_golden(y, gold, bound, what=f"{name} {when}", record=False)


def live(rec: components.Component, life: _Life, c: components.Case, o: components.Case, seed: int) -> None:
    """The life of the modules in ``<component>_follows_its_module_lifecycle``, step by step."""
    __tracebackhide__ = True
    twin = rec.other_options(c) if rec.other_options is not None else None
    p2, p3 = S.fresh_params(c.params, rec.gains, seed), S.fresh_params(c.params, rec.gains, seed + 1)
    longer = doubled(c.inputs)
    m = life.build(c)
    life.check(m, c, c.inputs, "at the first call")
    second = life.build(twin) if twin is not None else None
    if second is not None:
        life.check(second, twin, longer, f"of a second instance of other options ({_options(rec, twin)})")
    third = life.build(o)
    life.check(third, o, o.inputs, "of a third instance (other sizes)")
    reload(m, p2, life.dtype, life.device, rec.name)
    life.check(m, c.with_params(p2), longer, "after load_state_dict with new parameters, on twice the rows")
    life.check(third, o, o.inputs, "of the third instance, called again")
    update_in_place(m, p3, rec.name)
    for k in range(2):
        life.check(m, c.with_params(p3), c.inputs, f"after an in-place update of every parameter (call {k + 1})")
    if second is not None:
        life.check(second, twin, c.inputs, "of the second instance, called again")


def _options(rec: components.Component, case: components.Case) -> str:
    """The constructor options a case was built with, shown: "eps=0.01", "rope_theta=10, norm_eps=1e-05"."""
    shown = {**case.kwargs}
    config = case.args[0] if case.args and hasattr(case.args[0], "rope_theta") else None
    if config is not None:
        shown |= {"rope_theta": config.rope_theta, "norm_eps": config.norm_eps}
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items())


def _statement(rec: components.Component) -> str:
    twin = (
        "a second instance of the same sizes with other constructor options and "
        if rec.other_options is not None
        else ""
    )
    return (
        f"Every call of one {rec.name} matches golden, every output, for the parameters and options it has at that "
        f"moment: with {twin}a third instance of other sizes called in between, after load_state_dict with new "
        f"values of every parameter (on twice the rows: a longer sequence), after an in-place update of every "
        f"parameter (an optimizer step), on repeated calls."
    )


def _lives(rec: components.Component, dtype: DType) -> Any:
    """(case with at least two rows, a third instance's case, a weight seed): what one example draws."""
    case, third = rec.cases(dtype, min_rows=2, **rec.cheap), rec.cases(dtype, **rec.cheap)
    return st.tuples(case, third, st.integers(0, 2**32))


def _pinned(rec: components.Component) -> Any:
    """The record's pinned case (``Component.pinned``) as the first and the third instance's, seed 17."""

    def build(dtype: DType) -> tuple[Any, Any, int]:
        case = rec.pinned(dtype)
        return case, case, 17

    return S.Pin(f"{rec.name}: its protocol pin", build)


@family("lifecycle", axis="module lifecycle: reload, in-place update, repeated calls, several instances")
def _lifecycle(rec: components.Component) -> tuple[str, ...]:
    def follows_its_module_lifecycle(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
        c, o, seed = data.draw(_lives(rec, dtype), label="case")
        c, o = rec.as_case(c), rec.as_case(o)
        note(c)
        live(rec, _Life(rec, impl, dtype, device), c, o, seed)

    fn = named(follows_its_module_lifecycle, f"{rec.snake}_follows_its_module_lifecycle", _statement(rec))
    if rec.pinned is not None:
        fn = example(data=_pinned(rec))(fn)
    limits = rec.limits.get("lifecycle", {})
    dtypes = tuple(d for d in ALL_DTYPES if fmt(d).name in limits.get("dtypes", NAMES))
    law(rec.name, dtypes=dtypes, cost=limits.get("cost", 4))(given(data=st.data())(fn))
    return (f"{rec.name}.{fn.__name__}",)
