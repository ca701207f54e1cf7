"""The generic axes of a call: law families written once over the component records (``components.RECORDS``).

PyTorch runs the same generic tests over every module (``ModuleInfo``, ``test/test_modules.py``) and every operator
(``OpInfo``, ``test_ops.py``); these families are ours (docs/laws.md, "The axes of a call", lists every axis and
the laws that walk it). Each is a ``families`` family: one law per component record, ``<component>_<suffix>`` (at
import, for every record; a component added later by ``components.register`` gets them by ``families.apply``);
where a family cannot apply, its ``reason`` says why, derived from the record (the matrix prints it).

    call contexts     the module called under each context a framework sets (``regimes.call_contexts``: threads,
                      deterministic algorithms, autograd recording, inference_mode, CPU autocast bf16, all at once):
                      every output matches golden within its bound — under autocast an output is in the input dtype
                      or the autocast dtype, judged within the bound of the autocast dtype on inputs exact in it;
                      under deterministic algorithms a second call is bitwise the first
    mixed dtypes      fp32 master parameters, bf16 inputs (a component whose parameters are all norm gains: a
                      linear layer's input must be in its weight's dtype, so mixed precision reaches SwiGLU and the
                      Block through autocast): the output in the input dtype or the promoted one (HF Llama returns
                      the promoted fp32), every element within the input dtype's bound of golden for γ as loaded or
                      for γ rounded to the input dtype (torch's and HF's casts)
    second order      fp64 gradgradcheck through the module, for every non-empty subset of its outputs
    output subsets    (more than one output) the gradient for cotangents of a proper subset of the outputs, the
                      others unused (cotangent None), matches the golden VJP with zero cotangents there
    storage reuse     a second call whose inputs live in the memory the first call's inputs were freed from (new
                      tensor objects, the same data_ptr) matches golden for its own values
    magnitudes        inputs with massive channels (±2^7 … 2^13 in fixed channels: ``regimes.massive_inputs``):
                      outputs, and the gradients where a golden VJP exists, match golden within the bounds
    lifecycle moves   copy.deepcopy, a pickle round trip, the state_dict's names and values and its load into
                      another instance, ``.to(fp64).to(dtype)``, ``to_empty`` (its uninitialised memory NaN, as a
                      meta-device build leaves it) + ``reset_parameters()`` where defined + load_state_dict: each
                      matches golden
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from properties.library import contexts, families, harness, regimes
from properties.library import strategies as S
from properties.library.assertions import (
    assert_bitwise_equal,
    assert_matches_golden,
    fail,
    golden_agreement,
)
from properties.library.components import Case, Component
from properties.library.context import describe, measure
from properties.library.table import law

__all__ = ["AXES", "Axis", "law_id", "not_applicable"]

DType = torch.dtype
Data = st.DataObject
# What torch's autograd raises for one of its own operators that has no double-backward formula (derivatives.yaml:
# SDPA's fused CPU kernels, for one): a documented gap of torch, as loud as NotImplementedError — skipped with it.
# (A subject's autograd Function whose backward is not differentiable — computed under no_grad, from detached
# tensors, or marked @once_differentiable — fails the check itself: zero analytical second derivatives.)


@dataclasses.dataclass(frozen=True)
class Axis:
    """One generic axis: its family name (the matrix column), what it walks, the suffix of its law ids, the law body
    for a record, where it runs, and when it cannot apply (``reason(record)``: None where it applies)."""

    name: str
    axis: str
    suffix: str
    make: Callable[[Component], Callable[..., Any]]  # the law body for a record (``(impl, dtype, device, data)``)
    dtypes: tuple[DType, ...]
    cost: int
    reason: Callable[[Component], str | None] | None = None


# ---------------------------------------------------------------------------------------------- shared steps
def _as(case: Case, dtype: DType) -> Case:
    """The same values held in ``dtype`` (exact: ``dtype`` is at least as wide as the case's)."""
    return dataclasses.replace(
        case,
        inputs=tuple(t.to(dtype) for t in case.inputs),
        params={k: v.to(dtype) for k, v in case.params.items()},
    )


def _on(case: Case, device: str) -> tuple[torch.Tensor, ...]:
    return tuple(t.to(device) for t in case.inputs)


def _judge(
    record: Component,
    outs: tuple,
    case: Case,
    dtype: DType,
    when: str,
    *,
    record_ulps: bool = True,
    memo: dict[Any, Any] | None = None,
) -> None:
    """Every output within its bound (in ``dtype``) of its golden value (``memo``: golden values and bounds kept
    across the calls of one case)."""
    __tracebackhide__ = True
    memo = {} if memo is None else memo
    if "golden" not in memo:
        memo["golden"] = record.golden(case)
    if dtype not in memo:
        memo[dtype] = record.bounds(case, dtype, random_weights=True)
    golds, bnds = memo["golden"], memo[dtype]
    for name, out, gold, b in zip(record.outputs, outs, golds, bnds, strict=True):
        assert_matches_golden(out.detach(), gold, b, what=f"{name} {when}".strip(), record=record_ulps)


def _outputs_shaped(record: Component, outs: tuple, x: torch.Tensor, dtypes: tuple[DType, ...], when: str) -> None:
    """Every output has x's shape and device and one of ``dtypes`` (this law's own assertion)."""
    __tracebackhide__ = True
    for name, out in zip(record.outputs, outs, strict=True):
        problems = []
        if tuple(out.shape) != tuple(x.shape):
            problems.append(f"shape {tuple(out.shape)} ≠ {tuple(x.shape)}")
        if out.dtype not in dtypes:
            problems.append(f"dtype {out.dtype} not one of {', '.join(map(str, dict.fromkeys(dtypes)))}")
        if out.device.type != x.device.type:
            problems.append(f"device {out.device} ≠ {x.device}")
        if problems:
            fail(f"{record.name} output {name} {when}: " + "; ".join(problems))


def _subsets(n: int, *, proper: bool = False) -> list[tuple[int, ...]]:
    """The non-empty subsets of range(n), smallest first (``proper``: without the whole)."""
    sizes = range(1, n if proper else n + 1)
    return [s for k in sizes for s in itertools.combinations(range(n), k)]


def _named(record: Component, subset: tuple[int, ...]) -> str:
    """The outputs in ``subset``, by name."""
    return ", ".join(record.outputs[i] for i in subset)


def _params_of(record: Component, module: torch.nn.Module) -> list[torch.Tensor]:
    """The module's parameters under the contract's names, in the record's order (a missing one: contract)."""
    params = dict(module.named_parameters())
    missing = [n for n in record.params if n not in params]
    if missing:
        fail(f"{record.name} has no parameter {', '.join(missing)} (named_parameters: {sorted(params)})", "contract")
    return [params[n] for n in record.params]


def _seeded(inputs: tuple[torch.Tensor, ...], dtype: DType, seed: int) -> tuple[torch.Tensor, ...]:
    """New values N(0.25, 1) in ``dtype`` for ``inputs``' shapes (input i from ``seed + i``)."""
    return tuple(
        torch.from_numpy(np.random.default_rng(seed + i).standard_normal(tuple(t.shape)) + 0.25).to(dtype)
        for i, t in enumerate(inputs)
    )


def _cotangents(case: Case, n: int, dtype: DType, seed: int, used: tuple[int, ...] | None = None) -> tuple:
    """A seeded cotangent (output i: ``seed + i``) for each of ``n`` outputs — of the first input's shape, every
    output's (``Component.call`` checks it) — or None for an output outside ``used`` (unused)."""
    shape = tuple(case.inputs[0].shape)
    return tuple(S.cotangent(shape, dtype, seed + i) if used is None or i in used else None for i in range(n))


def _backward(record: Component, module: Any, case: Case, device: str, cots: tuple) -> list[Any]:
    """The gradients w.r.t. every input and parameter (None: no gradient) of a call on the case's inputs, for the
    outputs that have a cotangent in ``cots`` (the others unused)."""
    __tracebackhide__ = True
    leaves = tuple(t.to(device).requires_grad_(True) for t in case.inputs)
    wrt = [*leaves, *_params_of(record, module)]
    outs = record.call(module, leaves, grad=True)
    used = [i for i, c in enumerate(cots) if c is not None]
    return harness.backward(
        tuple(outs[i] for i in used), tuple(cots[i].to(device) for i in used), wrt, component=record.name
    )


def _gradients_match(
    record: Component,
    module: Any,
    case: Case,
    dtype: DType,
    device: str,
    cots: tuple,
    when: str,
    *,
    none_is_zero: bool = False,
) -> None:
    """The gradients for ``cots`` (``_backward``), each within its bound of the golden VJP; a missing one (None)
    fails — or, with ``none_is_zero``, is judged as zeros (an input no used output depends on)."""
    __tracebackhide__ = True
    got = _backward(record, module, case, device, cots)
    expected = record.vjp(case, cots, dtype)
    for name, g in zip(record.differentiable, got, strict=True):
        if g is None and not none_is_zero:
            fail(f"{record.name} backward gives no gradient for {name}")
        gold, b = expected[name]
        what = f"∂/∂{name} {when}" + (" (no gradient: zeros)" if g is None else "")
        actual = torch.zeros_like(case.params.get(name, case.inputs[0])) if g is None else g
        assert_matches_golden(actual, gold, b, what=what, record=False)


# ---------------------------------------------------------------------------------------------- call contexts
def _under(record: Component, module: Any, inputs: tuple, case: Any, dtype: DType, ctx: Any, memo: dict) -> None:
    """One call of the context law: ``module(*inputs)`` under ``ctx``, its outputs judged (autocast: in the input
    dtype or the autocast dtype, at that precision); under deterministic algorithms a second call bitwise the first."""
    __tracebackhide__ = True
    describe(call_context=str(ctx))
    when = f"under {ctx}"
    with contexts.within(ctx):
        outs = record.call(module, inputs, grad=ctx.grad == "enabled", check=ctx.autocast is None)
    judged = dtype
    if ctx.autocast is not None:  # an op autocast lists may run in its dtype: judged at that precision
        judged = ctx.autocast_dtype
        _outputs_shaped(record, outs, inputs[0], (dtype, judged), when)
    _judge(record, outs, case, judged, when, record_ulps=ctx == contexts.PLAIN, memo=memo)
    if ctx.deterministic:
        with contexts.within(ctx):
            again = record.call(module, inputs, grad=ctx.grad == "enabled", check=False)
        for name, a, b in zip(record.outputs, outs, again, strict=True):
            why = "deterministic algorithms: the same call twice gives the same bits"
            assert_bitwise_equal(b.detach(), a.detach(), what=f"{name} of a second call {when}", why=why)


def _contexts(record: Component) -> Callable[..., Any]:
    def body(impl: Any, dtype: DType, device: str, data: Data) -> None:
        wide = dtype == torch.float32  # drawn exact in bf16: autocast's cast of the inputs is then exact
        case = data.draw(record.cases(torch.bfloat16 if wide else dtype, max_dim=64), label="case")
        case = _as(case, dtype) if wide else case
        harness.note(case)
        module = record.build(impl, case, dtype, device)
        inputs, memo = _on(case, device), {}
        for ctx in regimes.call_contexts(dtype):
            _under(record, module, inputs, case, dtype, ctx, memo)

    body.__doc__ = (
        f"{record.name} called under each context a framework sets — {_SEVERAL} intra-op threads, deterministic "
        "algorithms (a second call bitwise the first), autograd recording, inference_mode, CPU autocast bf16 (fp32 "
        "inputs: each output in the input dtype or bf16, judged within the bf16 bound on inputs exact in bf16), all "
        "at once — matches golden within its bound."
    )
    return body


_SEVERAL = regimes.SEVERAL_THREADS


# ---------------------------------------------------------------------------------------------- mixed dtypes
def _mixed_reason(record: Component) -> str | None:
    if record.params and set(record.params) <= set(record.gains):
        return None
    return (
        "its parameters include nn.Linear weights, and a linear layer requires its input in its weight's dtype "
        "(torch raises): mixed precision reaches it through autocast (the call-context family)"
    )


def _master(values: torch.Tensor, dtype: DType, seed: int) -> torch.Tensor:
    """fp32 master weights near ``values`` that ``dtype`` cannot hold: each moved ¼–¾ of the way to its neighbour in
    ``dtype`` (away from zero)."""
    t = values.to(dtype).contiguous()
    neighbour = (t.view(torch.int16) + 1).view(dtype).double()
    v = t.double()
    neighbour = torch.where(torch.isfinite(neighbour), neighbour, v)
    frac = torch.from_numpy(np.random.default_rng(seed).uniform(0.25, 0.75, tuple(v.shape)))
    return (v + (neighbour - v) * frac).to(torch.float32)


def _loaded_and_rounded(case: Case, dtype: DType, seed: int) -> tuple[Case, Case]:
    """The case with fp32 master parameters (``_master``, parameter i from ``seed + i``): as loaded, and as cast to
    ``dtype`` (the input's) — the two conventions a mixed-precision call may follow."""
    master = {k: _master(v, dtype, seed + i) for i, (k, v) in enumerate(case.params.items())}
    exact = case.with_params(master)  # the parameters as loaded: fp32
    rounded = case.with_params({k: v.to(dtype).to(torch.float32) for k, v in master.items()})  # cast to x's
    return exact, rounded


def _judge_either(record: Component, outs: tuple, cases: tuple[Case, Case], dtype: DType, when: str) -> None:
    """Every output within ``dtype``'s bound of golden for the first case (γ as loaded) or the second (γ rounded to
    the input dtype): throughout for one of them, or element by element for one or the other."""
    __tracebackhide__ = True
    golds = [record.golden(c) for c in cases]
    bnds = [record.bounds(c, dtype) for c in cases]
    for k, (name, out) in enumerate(zip(record.outputs, outs, strict=True)):
        y = out.detach()
        agree = [golden_agreement(y.cpu(), g[k], b[k], y.dtype) for g, b in zip(golds, bnds, strict=True)]
        which = next((i for i, a in enumerate(agree) if a.all()), None)
        if which is None and (agree[0] | agree[1]).all():
            measure(f"{name} {when}", "each element one of the two γ conventions, neither throughout")
            continue  # every element is a correct result for one of the accepted conventions
        what = f"{name} {when}" + (" (γ rounded to the input dtype)" if which == 1 else "")
        which = which or 0  # (neither explains every element: judged, and failed, against γ as loaded)
        assert_matches_golden(y, golds[which][k], bnds[which][k], what=what)


def _mixed(record: Component) -> Callable[..., Any]:
    def body(impl: Any, dtype: DType, device: str, data: Data) -> None:
        case = data.draw(record.cases(dtype, max_dim=64), label="case")
        seed = data.draw(st.integers(0, 2**32 - 1), label="master weight seed")
        harness.note(case)
        exact, rounded = _loaded_and_rounded(case, dtype, seed)
        module = record.build(impl, exact, torch.float32, device)  # fp32 parameters (master weights)
        inputs = _on(case, device)
        outs = record.call(module, inputs, check=False)
        when = "with fp32 parameters"
        _outputs_shaped(record, outs, inputs[0], (dtype, torch.promote_types(dtype, torch.float32)), when)
        _judge_either(record, outs, (exact, rounded), dtype, when)

    body.__doc__ = (
        f"{record.name} with fp32 master parameters (values no 16-bit dtype holds) called on bf16 inputs returns each "
        "output in the input dtype or the promoted one (HF Llama's fp32), every element within the input dtype's "
        "bound of golden for the parameters as loaded or as rounded to the input dtype (torch's, HF's cast)."
    )
    return body


# ---------------------------------------------------------------------------------------------- second order
def _leaves(record: Component, case: Case, device: str) -> tuple[torch.Tensor, ...]:
    """The case's inputs, then its parameters in the record's order, on ``device``, requiring grad."""
    return (
        *(t.to(device).requires_grad_(True) for t in case.inputs),
        *(case.params[p].to(device).requires_grad_(True) for p in record.params),
    )


def _outputs_in(record: Component, module: Any, subset: tuple[int, ...]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """The function of the leaves (``_leaves``' order) that gradgradcheck differentiates: the module called with
    those parameters, its outputs in ``subset``."""
    n = len(record.inputs)

    def f(*ts: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = torch.func.functional_call(module, dict(zip(record.params, ts[n:], strict=True)), tuple(ts[:n]))
        outs = (out,) if len(record.outputs) == 1 else tuple(out)
        return tuple(outs[i] for i in subset)

    return f


def _second_order(record: Component) -> Callable[..., Any]:
    def body(impl: Any, dtype: DType, device: str, data: Data) -> None:
        case = data.draw(record.cases(dtype, max_dim=16), label="case")
        seed = data.draw(st.integers(0, 2**32 - 1), label="input seed")
        # inputs of unit scale, N(0.25, 1): a finite difference of step 1e-6 resolves the function there (near a zero
        # row the norm's curvature lives at the scale √eps, which may be 1e-6 itself: no derivative check can judge)
        case = case.with_inputs(_seeded(case.inputs, dtype, seed))
        harness.note(case)
        module = record.build(impl, case, dtype, device)
        record.call(module, tuple(t.to(device) for t in case.inputs))  # once, recorded: what a diagnosis re-evaluates
        leaves = _leaves(record, case, device)
        for subset in _subsets(len(record.outputs)):
            what = f"({_named(record, subset)}) w.r.t. {', '.join(record.differentiable)}"
            harness.gradcheck(_outputs_in(record, module, subset), leaves, component=record.name, order=2, what=what)

    body.__doc__ = (
        f"In fp64 the second derivatives of {record.name} (the derivative of its backward: gradient penalties, "
        "Hessian–vector products) agree with finite differences of its first (torch.autograd.gradgradcheck on every "
        "input and parameter, for every non-empty subset of its outputs; inputs of unit scale)."
    )
    return body


# ---------------------------------------------------------------------------------------------- output subsets
def _subsets_reason(record: Component) -> str | None:
    if len(record.outputs) < 2:
        return "one output: its only non-empty subset is the whole, which the gradient laws differentiate"
    if record.vjp_of is None:
        return "no gradient oracle in its record"
    return None


def _output_subsets(record: Component) -> Callable[..., Any]:
    def body(impl: Any, dtype: DType, device: str, data: Data) -> None:
        case = data.draw(record.cases(dtype, max_dim=64), label="case")
        harness.note(case)
        module = record.build(impl, case, dtype, device)
        for subset in _subsets(len(record.outputs), proper=True):
            used = _named(record, subset)
            cots = _cotangents(case, len(record.outputs), dtype, 7, subset)  # None: that output unused
            when = f"with only ({used}) differentiated"
            _gradients_match(record, module, case, dtype, device, cots, when, none_is_zero=True)

    body.__doc__ = (
        f"Differentiating a proper subset of {record.name}'s outputs (the others unused, their cotangent None: "
        "AddRMSNorm called for y with h unused, or for h alone) gives the golden VJP with zero cotangents there, for "
        "every input and parameter."
    )
    return body


# ---------------------------------------------------------------------------------------------- storage reuse
def _over(storages: list, inputs: tuple[torch.Tensor, ...], dtype: DType, device: str) -> tuple[torch.Tensor, ...]:
    """``inputs`` copied into new tensor objects over the freed ``storages``, as an allocator hands freed memory to
    the next tensors."""
    return tuple(
        torch.empty(0, dtype=dtype, device=device).set_(storage, 0, t.shape).copy_(t.to(device))
        for storage, t in zip(storages, inputs, strict=True)
    )


def _storage_reuse(record: Component) -> Callable[..., Any]:
    def body(impl: Any, dtype: DType, device: str, data: Data) -> None:
        case = data.draw(record.cases(dtype, max_dim=64, min_rows=2), label="case")
        seed = data.draw(st.integers(0, 2**32 - 1), label="first input seed")
        harness.note(case)
        module = record.build(impl, case, dtype, device)
        first = tuple(t.to(device) for t in _seeded(case.inputs, dtype, seed))
        storages = [t.untyped_storage() for t in first]
        record.call(module, first)
        del first  # freed: the next inputs land in the same memory
        outs = record.call(module, _over(storages, case.inputs, dtype, device))
        _judge(record, outs, case, dtype, "of a call whose inputs reuse the memory of the previous call's")

    body.__doc__ = (
        f"{record.name} called on inputs that live in the memory of the previous call's inputs (freed, handed to the "
        "next tensors as an allocator does: new tensor objects, the same data_ptr) matches golden for the new values."
    )
    return body


# ---------------------------------------------------------------------------------------------- magnitudes
def _magnitudes(record: Component) -> Callable[..., Any]:
    def body(impl: Any, dtype: DType, device: str, data: Data) -> None:
        case = data.draw(record.cases(dtype, max_dim=64), label="case")
        inputs, how = data.draw(regimes.massive_inputs(case.inputs), label="massive channels")
        big = case.with_inputs(inputs)
        harness.note(big)
        describe(**how.describe())
        module = record.build(impl, big, dtype, device)
        _judge(record, record.call(module, _on(big, device)), big, dtype, "with massive channels")
        if record.golden_vjp_of is not None:  # (none: the Block, its derivative oracle is the baselines')
            cots = _cotangents(big, len(record.outputs), dtype, 11)
            _gradients_match(record, module, big, dtype, device, cots, "with massive channels")

    body.__doc__ = (
        f"{record.name} on inputs with massive channels (1–3 fixed channels of every row at ±2^7 … 2^13, as trained "
        "LLMs' residual streams carry) matches golden within its bound — and so do its gradients where a golden VJP "
        "exists."
    )
    return body


# ---------------------------------------------------------------------------------------------- lifecycle moves
def _reset(module: torch.nn.Module) -> None:
    """``reset_parameters()`` of every submodule that defines it (what FSDP's meta-device init calls)."""
    with torch.no_grad():
        for m in module.modules():
            if callable(getattr(m, "reset_parameters", None)):
                m.reset_parameters()


def _poison(module: torch.nn.Module) -> None:
    """Every floating parameter and buffer set to NaN: what the uninitialised memory ``to_empty`` leaves may hold
    (a meta-device build followed by ``to_empty`` is how large models are materialised: FSDP, HF's low-memory load)."""
    with torch.no_grad():
        for t in itertools.chain(module.parameters(), module.buffers()):
            if t.is_floating_point():
                t.fill_(float("nan"))


def _perturbed(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: -v.flip(-1) for k, v in params.items()}


@dataclasses.dataclass(frozen=True)
class _Life:
    """One case taken through the moves of a module's life: each move a guarded step (``ops``: a failing one names
    itself), each module it leaves called on the case's ``inputs`` and judged against golden (kept in ``memo``)."""

    record: Component
    impl: Any
    case: Case
    dtype: DType
    device: str
    ops: harness.Ops
    inputs: tuple[torch.Tensor, ...]
    memo: dict[Any, Any] = dataclasses.field(default_factory=dict)

    def check(self, module: torch.nn.Module, when: str) -> None:
        __tracebackhide__ = True
        outs = self.record.call(module, self.inputs)
        _judge(self.record, outs, self.case, self.dtype, when, record_ulps=False, memo=self.memo)

    def build(self, params: dict[str, torch.Tensor] | None = None) -> torch.nn.Module:
        return self.record.build(self.impl, self.case, self.dtype, self.device, params=params)

    def after_deepcopy(self, module: torch.nn.Module) -> None:
        """A copy computes the same function; new weights loaded into it change the copy alone."""
        __tracebackhide__ = True
        twin = self.ops.step("copy.deepcopy(module)", lambda: copy.deepcopy(module))
        self.check(twin, "of a copy.deepcopy")
        other = _perturbed(self.case.params)  # the copy is a module of its own: new weights in it leave the original be
        harness.reload(twin, other, self.dtype, self.device, self.record.name)
        outs, when = self.record.call(twin, self.inputs), "of the copy after loading new weights into it"
        _judge(self.record, outs, self.case.with_params(other), self.dtype, when, record_ulps=False)
        self.check(module, "of the original after new weights were loaded into its copy")

    def after_pickle(self, module: torch.nn.Module) -> None:
        """A module that pickles comes back computing the same function (one that does not: measured, not failed)."""
        __tracebackhide__ = True
        try:  # a module need not pickle (torch recommends state_dict; a class defined in a function cannot) …
            saved = pickle.dumps(module)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            measure("pickle", f"not picklable: {type(exc).__name__}: {exc}")
        else:  # … but one that does must come back computing the same function
            back = self.ops.step("pickle.loads of its pickle", lambda: pickle.loads(saved))
            self.check(back, "after a pickle round trip")

    def after_state_dict(self, module: torch.nn.Module) -> None:
        """The state_dict has the contract's names and the loaded values; loaded into another instance, that one
        computes the same function."""
        __tracebackhide__ = True
        record, ops = self.record, self.ops
        state = ops.step("state_dict()", module.state_dict)
        if set(state) != set(record.params):
            fail(f"{record.name}.state_dict() has keys {sorted(state)}, not the contract's {sorted(record.params)}")
        for name in record.params:
            assert_bitwise_equal(state[name], self.case.params[name], what=f"state_dict()[{name!r}]", why="as loaded")
        fresh = self.build(_perturbed(self.case.params))
        ops.step("load_state_dict(another instance's state_dict())", lambda: fresh.load_state_dict(state, strict=True))
        self.check(fresh, "after loading another instance's state_dict()")

    def after_dtype_round_trip(self, module: torch.nn.Module) -> None:
        """Moved to fp64 and back, the module computes the same function (its values survive both casts)."""
        __tracebackhide__ = True
        dtype = self.dtype
        moved = self.ops.step(f".to(torch.float64).to({dtype})", lambda: module.to(torch.float64).to(dtype))
        self.check(moved, f"after .to(torch.float64).to({dtype})")

    def after_to_empty(self) -> None:
        """Another instance moved by ``to_empty`` (its memory uninitialised: NaN here), ``reset_parameters()`` where
        defined, and the case's weights loaded computes the case's function."""
        __tracebackhide__ = True
        ops, device = self.ops, self.device
        empty = self.build(_perturbed(self.case.params))
        ops.step(f"to_empty(device={device!r})", lambda: empty.to_empty(device=device))
        _poison(empty)
        ops.step("reset_parameters() of each submodule defining it", lambda: _reset(empty))
        harness.reload(empty, self.case.params, self.dtype, device, self.record.name)
        self.check(empty, "after to_empty (memory left uninitialised: NaN here), reset_parameters(), load_state_dict")


def _lifecycle(record: Component) -> Callable[..., Any]:
    def body(impl: Any, dtype: DType, device: str, data: Data) -> None:
        case = data.draw(record.cases(dtype, max_dim=32), label="case")
        harness.note(case)
        life = _Life(record, impl, case, dtype, device, harness.Ops(record.name), _on(case, device))
        module = life.build()
        life.check(module, "as built")
        life.after_deepcopy(module)
        life.after_pickle(module)
        life.after_state_dict(module)
        life.after_dtype_round_trip(module)
        life.after_to_empty()

    body.__doc__ = (
        f"{record.name} matches golden after each move of its life: copy.deepcopy (new weights loaded into the copy "
        "change the copy alone), a pickle round trip (where it "
        "pickles at all), its "
        "state_dict (the contract's names, the loaded values) loaded into another instance, .to(float64).to(dtype), "
        "and to_empty (its uninitialised memory NaN) followed by reset_parameters() and load_state_dict."
    )
    return body


# ---------------------------------------------------------------------------------------------- the families
FP32, BF16, FP64 = torch.float32, torch.bfloat16, torch.float64
AXES: tuple[Axis, ...] = (
    Axis("call contexts", "threads, deterministic algorithms, grad modes, inference_mode, autocast",
         "holds_in_every_call_context", _contexts, (FP32,), 4),
    Axis("mixed dtypes", "parameters in another dtype than the input (fp32 master weights)",
         "accepts_parameters_in_another_dtype", _mixed, (BF16,), 2, _mixed_reason),
    Axis("second order", "double backward through every output subset",
         "second_derivatives_pass_gradgradcheck", _second_order, (FP64,), 4),
    Axis("output subsets", "every proper subset of the outputs differentiated",
         "differentiates_any_subset_of_outputs", _output_subsets, (FP32, BF16), 2, _subsets_reason),
    Axis("storage reuse", "inputs in the memory of freed inputs", "ignores_storage_reuse", _storage_reuse, (FP32,), 4),
    Axis("magnitudes", "massive activations (hundreds to thousands)",
         "matches_golden_at_real_magnitudes", _magnitudes, (FP32, BF16), 2),
    Axis("lifecycle moves", "deepcopy, pickle, state_dict, .to, to_empty",
         "survives_copies_moves_and_to_empty", _lifecycle, (FP32,), 4),
)  # fmt: skip


def not_applicable(record: Component) -> dict[str, str]:
    """{family name: why it does not apply} for ``record``, over the axes of this module."""
    return {a.name: why for a in AXES if (why := families.FAMILIES[a.name].not_applicable(record)) is not None}


def law_id(record: Component, axis: Axis) -> str:
    return f"{record.name}.{record.snake}_{axis.suffix}"


def _definer(axis: Axis) -> Callable[[Component], tuple[str, ...]]:
    def define(record: Component) -> tuple[str, ...]:
        body = axis.make(record)
        body.__name__ = body.__qualname__ = f"{record.snake}_{axis.suffix}"
        body.__module__ = __name__
        law(record.name, dtypes=axis.dtypes, cost=axis.cost, tags=("axis",))(given(data=st.data())(body))
        return (law_id(record, axis),)

    return define


for _axis in AXES:
    families.family(_axis.name, axis=_axis.axis, reason=_axis.reason)(_definer(_axis))
