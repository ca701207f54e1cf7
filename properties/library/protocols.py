"""Call protocols: the ways real frameworks call a module, as an axis the value laws are drawn along.

The laws build a module and call it; frameworks call it in many more ways, and kernels keep state, buffers and
fast paths that only some of those ways exercise. A *protocol* is one such way, applied by the harness
(``harness.build`` / ``call`` / ``backward``) to every module the law builds from the implementation under test
— never to the reference modules a law builds itself. A law opts in with ``@honoured(FAMILY, pin=…)`` right above
its ``def``: every example then draws a protocol of the family first (label "protocol", shrinking to ``PLAIN``)
and the law's own body, unchanged, runs under it; the pin runs the law once under each protocol ``PINNED`` for the
family, in fp32 and bf16, in every profile (so the ci profile sees every protocol of the value laws). A law of
value holds under each protocol with the same golden value and the same bound: a protocol changes how the
module is called, never what it must compute.

Forward protocols (``FORWARD``; the judged output is the one the law compares):

    plain              eval(), torch.no_grad() — the laws' default
    train              train(), autograd recording (x as given, the parameters require grad)
    inference_mode     eval(), torch.inference_mode()
    modes switched     one instance called in train/autograd, inference_mode and eval/no_grad on other inputs
                       before the judged call
    held outputs       the output is kept while the module runs again on another input of the same shape, of
                       another shape, and another instance in another dtype runs; it must not change, and it never
                       overlaps an input, a parameter, another output or a later output
    alternated         another instance of the same sizes (other weights) runs before the judged call (and, with
                       gradients, a training step of it runs between the judged forward and backward)
    tied weights       the judged instance holds the parameters of another instance (tied by assignment, as
                       ``tie_weights`` does), which ran first
    moved after load   constructed and loaded in fp64, called, then moved with ``.to(dtype)``

Gradient protocols (``GRADIENT``: those of ``FORWARD`` that record a graph, and):

    accumulated        y.backward(g) into ``.grad`` (not torch.autograd.grad), twice, as gradient accumulation
                       over micro-batches does: the first pass is judged, the second must leave exactly twice it
                       (judged where a third pass shows the backward deterministic; measured otherwise)
    forwards between   before the backward, the module runs on another input in the same graph (that output's
                       cotangent zero) and once more under torch.no_grad()
    cotangent: sum     the cotangent of y.sum(): ones, broadcast with stride 0 over a buffer of NaN (y.mean()'s is
                       1/N materialised, contiguous: a value, not a layout)
    cotangent: row     one row of cotangent broadcast over the rows (stride 0 there)
    cotangent: transposed / strided   the cotangent in transposed storage / every other row of a NaN buffer
    partial            the input's gradient with every parameter frozen, the parameters' with the input detached
    checkpoint (reentrant), checkpoint   torch.utils.checkpoint with use_reentrant=True / False

Held gradients: under ``held outputs`` the gradients of the first backward are kept while a second
forward/backward runs; they must not change, nor overlap the cotangent, an input, a parameter or the second
backward's gradients, and the cotangent itself must come back unchanged (a backward must not write into it).

Why the law's own bound still holds: a protocol never changes the values a correct implementation computes from
the same inputs — the other calls use other inputs or other instances, a zero cotangent contributes exact zeros,
two equal passes accumulate to exactly twice the first, a view holds the same values — so a correct
implementation's judged result is one of its ordinary results (kernels may take another code path, e.g. a
training graph or a strided read: those are the results the law is about).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from hypothesis import assume, event, example
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from torch import nn

from properties.library import context, remote
from properties.library import strategies as S
from properties.library.assertions import assert_unchanged, fail

__all__ = [
    "FORWARD",
    "GRADIENT",
    "PLAIN",
    "PROTOCOLS",
    "Call",
    "Protocol",
    "Session",
    "Spec",
    "assert_apart",
    "flat",
    "honoured",
    "named",
    "session",
    "under",
]

Outputs = tuple[torch.Tensor, ...]


def flat(y: Any) -> Outputs:
    """A module's output as a tuple of tensors (a tensor, or a tuple / list of tensors such as AddRMSNorm's (y, h))."""
    return (y,) if isinstance(y, torch.Tensor) else tuple(y)


@dataclasses.dataclass(frozen=True)
class Spec:
    """How the harness built a subject module: enough to build another instance of it.

    ``make(dtype, state, load=True)`` constructs the component, moves it to (device, dtype), loads ``state``
    strictly (unless ``load`` is False) and puts it in eval mode; ``step(what, fn)`` runs another build step —
    each guarded as the harness guards its own (a failure is the subject's, cause "contract")."""

    component: str
    dtype: torch.dtype
    device: str
    state: dict[str, torch.Tensor]
    make: Callable[..., nn.Module]
    step: Callable[[str, Callable[[], Any]], Any]


@dataclasses.dataclass
class Call:
    """One call of a subject under a protocol, remembered for its backward."""

    module: nn.Module
    inputs: tuple[torch.Tensor, ...]
    outputs: Outputs
    companions: list[Outputs] = dataclasses.field(default_factory=list)  # more outputs of the same graph


class Ops:
    """What the harness lends a protocol (implemented by ``harness.Ops``): guarded steps, forward and backward."""

    component: str

    def step(self, what: str, fn: Callable[[], Any], cause: str = "contract") -> Any:
        """fn() guarded: an exception is a failure of ``cause`` naming ``what``; a changed global setting fails."""
        raise NotImplementedError

    def run(
        self, module: nn.Module, inputs: tuple[torch.Tensor, ...], *, grad: bool, inference: bool = False, via=None
    ) -> Any:
        """module(*inputs) under set_grad_enabled(grad) (or inference_mode), or via(module, *inputs); a crash."""
        raise NotImplementedError

    def grad(self, outputs: Outputs, wrt: Sequence[torch.Tensor], cotangents: Outputs) -> list[Any]:
        """torch.autograd.grad(outputs, wrt, cotangents, allow_unused=True), guarded."""
        raise NotImplementedError

    def backward(self, outputs: Outputs, cotangents: Outputs) -> None:
        """torch.autograd.backward(outputs, cotangents): gradients accumulate into every leaf's ``.grad``."""
        raise NotImplementedError


class Session:
    """One example's protocol and what it needs to remember: the subject modules the harness built (with their
    Spec) and the calls whose backward is still to come."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self._subjects: dict[int, tuple[nn.Module, Spec]] = {}
        self._calls: dict[int, tuple[Outputs, Call]] = {}
        self.state: dict[int, Any] = {}  # the protocol's own, keyed by id(module)

    def register(self, module: nn.Module, spec: Spec) -> None:
        self._subjects[id(module)] = (module, spec)

    def spec(self, module: nn.Module) -> Spec | None:
        entry = self._subjects.get(id(module))
        return entry[1] if entry is not None and entry[0] is module else None

    def remember(self, call: Call) -> None:
        self._calls[id(call.outputs[0])] = (call.outputs, call)

    def call_of(self, y: Any) -> Call | None:
        outs = flat(y)
        entry = self._calls.get(id(outs[0])) if outs else None
        return entry[1] if entry is not None and entry[0][0] is outs[0] else None


_SESSION: contextvars.ContextVar[Session | None] = contextvars.ContextVar("nanolm_protocol", default=None)


def session() -> Session | None:
    """The protocol session of the example in progress (None: no law with protocols is running)."""
    return _SESSION.get()


@contextlib.contextmanager
def under(protocol: Protocol) -> Iterator[Session]:
    """Run the block under ``protocol``: the harness applies it to the subject modules built inside."""
    s = Session(protocol)
    token = _SESSION.set(s)
    context.describe(protocol=protocol.name)
    if currently_in_test_context():
        event(f"protocol: {protocol.name}")
    try:
        with S.cotangents_of_kind(protocol.cotangents):
            yield s
    finally:
        _SESSION.reset(token)


# ---------------------------------------------------------------------------------------------- helpers


def fresh(
    inputs: Sequence[torch.Tensor], seed: int, *, more_rows: bool = False, dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, ...]:
    """Other inputs for the same module: N(0.25, 1) values exact in the dtype (``dtype``: another one), of the same
    shapes — or one more row along the leading dim (a 1-D input becomes two rows)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in inputs:
        shape = tuple(t.shape)
        if more_rows:
            shape = (shape[0] + 1, *shape[1:]) if len(shape) > 1 else (2, *shape)
        values = torch.from_numpy(rng.standard_normal(shape) + 0.25)
        out.append(values.to(dtype or t.dtype).to(t.device))
    return tuple(out)


def _span(t: torch.Tensor) -> tuple[str, int, int] | None:
    """The bytes a tensor's elements occupy: (device, first, past the last); None for an empty tensor. A tensor
    the subject's process holds (its output, gradient, parameter, or its copy of an input sent to it) is where the
    subject says it lies in its memory (``remote.span``): what the subject reports of its own outputs."""
    if t.numel() == 0:
        return None
    held = remote.span(t)
    if held is not None:
        return held
    extent = sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True)) + 1
    start = t.data_ptr()
    return str(t.device), start, start + extent * t.element_size()


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    sa, sb = _span(a), _span(b)
    return sa is not None and sb is not None and sa[0] == sb[0] and sa[1] < sb[2] and sb[1] < sa[2]


def assert_apart(mine: Sequence[Any], others: Sequence[tuple[str, Any]], what: str) -> None:
    """No tensor of ``mine`` overlaps in memory a tensor of ``others`` ((name, tensor) pairs; None skipped)."""
    __tracebackhide__ = True
    for i, t in enumerate(mine):
        for name, o in others:
            if t is not None and o is not None and _overlap(t, o):
                fail(f"{what} {i} shares memory with {name} (an aliased buffer: writing one changes the other)")


def _kept(ts: Sequence[Any]) -> list[Any]:
    return [None if t is None else t.detach().clone() for t in ts]


def _assert_kept(ts: Sequence[Any], kept: Sequence[Any], what: str) -> None:
    __tracebackhide__ = True
    remote.reread(ts)  # tensors of the subject's process: its bytes now (a kernel may write into what it returned)
    for i, (t, k) in enumerate(zip(ts, kept, strict=True)):
        if t is not None:
            assert_unchanged(k, t, what=f"{what} {i}")


def _parameters(module: nn.Module) -> list[tuple[str, torch.Tensor]]:
    return [(f"parameter {n}", p) for n, p in module.named_parameters()]


def named(call: Call, wrt: Sequence[torch.Tensor]) -> list[str]:
    """A name for each tensor a backward differentiates against: "input k" or the parameter's name."""
    params = {id(p): n for n, p in call.module.named_parameters()}
    names = []
    for t in wrt:
        k = next((i for i, x in enumerate(call.inputs) if x is t), None)
        names.append(f"input {k}" if k is not None else params.get(id(t), "a tensor"))
    return names


def _into_grad(ops: Ops, outputs: Outputs, cotangents: Outputs, wrt: Sequence[torch.Tensor]) -> list[Any]:
    """Gradients as training code gets them: ``.backward()`` without ``inputs`` accumulates into ``.grad`` (cleared
    before; a non-leaf retains its grad), read back and cleared after."""
    for t in wrt:
        t.grad = None
        if not t.is_leaf:
            t.retain_grad()
    ops.backward(outputs, cotangents)
    grads = [t.grad for t in wrt]
    for t in wrt:
        t.grad = None
    return grads


def _other_cotangents(outputs: Outputs, seed: int) -> Outputs:
    rng = np.random.default_rng(seed)
    return tuple(torch.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype).to(o.device) for o in outputs)


# ---------------------------------------------------------------------------------------------- the protocols


class Protocol:
    """One way of calling a module. The plain protocol (this class) builds, calls and differentiates as the laws
    always did: eval(), no_grad (or autograd for a gradient law), torch.autograd.grad."""

    name = "plain"
    summary = "eval(), torch.no_grad(); gradients by torch.autograd.grad"
    cotangents = "random"  # the structure of the law's cotangent values (strategies.COTANGENT_KINDS)

    def build(self, s: Session, spec: Spec) -> nn.Module:
        return spec.make(spec.dtype, spec.state)

    def forward(self, s: Session, ops: Ops, module: nn.Module, inputs: tuple[torch.Tensor, ...], grad: bool) -> Any:
        return ops.run(module, inputs, grad=grad)

    def grads(self, s: Session, ops: Ops, call: Call, cotangents: Outputs, wrt: Sequence[torch.Tensor]) -> list[Any]:
        return ops.grad(call.outputs, wrt, cotangents)

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"

    def __reduce__(self) -> tuple[Any, ...]:  # drawn values are pickled into counterexample files
        return _protocol_named, (self.name,)


def _mode(ops: Ops, module: nn.Module, train: bool) -> None:
    ops.step(f"{'train' if train else 'eval'}()", module.train if train else module.eval)


class Train(Protocol):
    name = "train"
    summary = "train(), autograd recording"

    def forward(self, s, ops, module, inputs, grad):
        _mode(ops, module, True)
        return ops.run(module, inputs, grad=True)


class Inference(Protocol):
    name = "inference_mode"
    summary = "eval(), torch.inference_mode()"

    def forward(self, s, ops, module, inputs, grad):  # a forward protocol: never drawn by a gradient law
        return ops.run(module, inputs, grad=False, inference=True)


class Switched(Protocol):
    name = "modes switched"
    summary = "one instance called in train/autograd, inference_mode and eval/no_grad before the judged call"

    def forward(self, s, ops, module, inputs, grad):
        first, second = fresh(inputs, 1), fresh(inputs, 2)
        if grad:  # a serving warm-up, an evaluation, then training resumes
            ops.run(module, first, grad=False, inference=True)
            ops.run(module, second, grad=False)
            _mode(ops, module, True)
            return ops.run(module, inputs, grad=True)
        _mode(ops, module, True)  # a training step, an inference_mode evaluation, then eval/no_grad
        ops.run(module, first, grad=True)
        _mode(ops, module, False)
        ops.run(module, second, grad=False, inference=True)
        return ops.run(module, inputs, grad=False)


def _unless_unsupported(run: Callable[[], Any], what: str) -> Any:
    """run() of a call the law does not judge; one in a dtype the subject does not support is left out (an
    event), never a skip of the law: the judged call is in the law's dtype."""
    try:
        return run()
    except context.NotApplicable:
        event(f"protocol: left out {what} (dtype not supported)")
        return ()


class Held(Protocol):
    name = "held outputs"
    summary = "the output kept while the module runs again (same shape, another shape, another dtype)"

    def forward(self, s, ops, module, inputs, grad):
        y = ops.run(module, inputs, grad=grad)
        outs, kept = flat(y), _kept(flat(y))
        mine = [("an input", t) for t in inputs] + _parameters(module)
        assert_apart(outs, mine, f"{ops.component} output")
        for i, o in enumerate(outs):
            assert_apart([o], [(f"output {j}", p) for j, p in enumerate(outs) if j != i], f"{ops.component} output")
        spec = s.spec(module)
        later = [
            ("another input of the same shape", lambda: ops.run(module, fresh(inputs, 3), grad=grad)),
            ("an input of another shape", lambda: ops.run(module, fresh(inputs, 4, more_rows=True), grad=grad)),
        ]
        if spec is not None:
            other = torch.float32 if spec.dtype != torch.float32 else torch.bfloat16

            def twin_ran() -> Any:
                twin = spec.make(other, {k: v.to(other) for k, v in spec.state.items()})
                return ops.run(twin, fresh(inputs, 5, dtype=other), grad=grad)

            later.append((f"another instance ran in {other}", twin_ran))
        for what, run in later:
            again = flat(_unless_unsupported(run, what))
            _assert_kept(outs, kept, f"{ops.component} output held while {what}: output")
            assert_apart(outs, [(f"the output after {what}", t) for t in again], f"{ops.component} output")
        return y

    def grads(self, s, ops, call, cotangents, wrt):
        cot_kept = _kept(cotangents)
        grads = ops.grad(call.outputs, wrt, cotangents)
        kept, names = _kept(grads), named(call, wrt)
        _assert_kept(cotangents, cot_kept, f"{ops.component} cotangent (the backward must not write into it):")
        inputs = fresh(call.inputs, 6)
        again = flat(ops.run(call.module, inputs, grad=True))
        params = [t for t, n in zip(wrt, names, strict=True) if not n.startswith("input")]
        second = ops.grad(again, params, _other_cotangents(again, 7)) if params else []
        what = f"{ops.component} gradient held while another backward ran: gradient"
        _assert_kept(grads, kept, what)
        others = [("the cotangent", c) for c in cotangents] + [("an input", t) for t in call.inputs]
        others += _parameters(call.module) + [("a gradient of the second backward", g) for g in second]
        assert_apart(grads, others, f"{ops.component} gradient")
        return grads


def _perturbed(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Other weights of the same shapes: each tensor negated and reversed along its last dim (exact)."""
    return {k: -v.flip(-1) for k, v in state.items()}


class Alternated(Protocol):
    name = "alternated"
    summary = "another instance of the same sizes (other weights) used in alternation"

    def build(self, s, spec):
        module = spec.make(spec.dtype, spec.state)
        s.state[id(module)] = spec.make(spec.dtype, _perturbed(spec.state))  # built after: the latest instance
        return module

    def forward(self, s, ops, module, inputs, grad):
        other = s.state.get(id(module))
        if other is not None:
            ops.run(other, fresh(inputs, 8), grad=grad)
        return ops.run(module, inputs, grad=grad)

    def grads(self, s, ops, call, cotangents, wrt):
        other = s.state.get(id(call.module))
        if other is not None:  # a training step of another layer between this forward and its backward
            outs = flat(ops.run(other, fresh(call.inputs, 9), grad=True))
            ops.grad(outs, list(other.parameters()), _other_cotangents(outs, 10))
        return ops.grad(call.outputs, wrt, cotangents)


class Tied(Protocol):
    name = "tied weights"
    summary = "the judged instance holds the parameters of another instance (tied by assignment)"

    def build(self, s, spec):
        owner = spec.make(spec.dtype, spec.state)
        twin = spec.make(spec.dtype, spec.state, load=False)
        params = list(owner.named_parameters())

        def tie() -> None:
            for name, p in params:
                prefix, _, attr = name.rpartition(".")
                setattr(twin.get_submodule(prefix) if prefix else twin, attr, p)

        spec.step(f"tying the parameters {[n for n, _ in params]} to another instance's", tie)
        s.state[id(twin)] = owner
        return twin

    def forward(self, s, ops, module, inputs, grad):
        owner = s.state.get(id(module))
        if owner is not None:
            ops.run(owner, fresh(inputs, 11), grad=grad)
        return ops.run(module, inputs, grad=grad)


class Moved(Protocol):
    name = "moved after load"
    summary = "constructed and loaded in fp64, called, then moved with .to(dtype)"

    def build(self, s, spec):
        module = spec.make(torch.float64, spec.state)
        s.state[id(module)] = spec.dtype  # moved at its first call
        return module

    def forward(self, s, ops, module, inputs, grad):
        dtype = s.state.pop(id(module), None)
        if dtype is not None:
            fp64 = tuple(t.detach().double() for t in inputs)
            _unless_unsupported(lambda: ops.run(module, fp64, grad=False), "the call in fp64")
            moved = ops.step(f".to({dtype}) after loading and a call", lambda: module.to(dtype))
            if moved is not module:
                fail(f"{ops.component}.to({dtype}) returned another module", "contract")
        return ops.run(module, inputs, grad=grad)


class Accumulated(Protocol):
    name = "accumulated"
    summary = "y.backward(g) into .grad, twice: the second pass leaves twice the first"

    def grads(self, s, ops, call, cotangents, wrt):
        for t in wrt:
            t.grad = None
            if not t.is_leaf:
                t.retain_grad()
        ops.backward(call.outputs, cotangents)
        first = [None if t.grad is None else t.grad.detach().clone() for t in wrt]
        ops.backward(flat(ops.run(call.module, call.inputs, grad=True)), cotangents)  # a second micro-batch
        total = [t.grad for t in wrt]
        for t in wrt:
            t.grad = None
        witness = ops.grad(flat(ops.run(call.module, call.inputs, grad=True)), wrt, cotangents)
        if all(_same(w, f) for w, f in zip(witness, first, strict=True)):  # deterministic: the second added `first`
            for name, f, t in zip(named(call, wrt), first, total, strict=True):
                if f is not None and not _same(t, f * 2):
                    _differ(t, f * 2, f"{ops.component}: .grad of {name} after two backward passes ≠ 2 × the first")
        else:
            context.measure("accumulation", "not judged: the backward is not deterministic")
        return first


def _differ(actual: Any, expected: torch.Tensor, what: str) -> None:
    """Fail naming the first element where ``actual`` (None: no gradient) is not bitwise ``expected``."""
    __tracebackhide__ = True
    if actual is None:
        fail(f"{what}: no gradient at all")
    a, e = actual.detach().double().cpu().reshape(-1), expected.detach().double().cpu().reshape(-1)
    differ = ~((a == e) | (a.isnan() & e.isnan()))
    i = int(differ.nonzero()[0]) if differ.any() else 0
    first = f"first at flat index {i}: {float(a[i])!r} ≠ {float(e[i])!r}"
    fail(f"{what}: {int(differ.sum())} of {a.numel()} elements differ; {first}")


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = a.detach(), b.detach().to(a.device)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return bool(torch.equal(a.contiguous().view(bits), b.contiguous().view(bits)))


class Between(Protocol):
    name = "forwards between"
    summary = "before the backward, the module runs again in the same graph and under torch.no_grad()"

    def forward(self, s, ops, module, inputs, grad):
        y = ops.run(module, inputs, grad=grad)
        if grad:  # another use in the same graph (its cotangent zero), then an evaluation under no_grad
            s.state[id(flat(y)[0])] = flat(ops.run(module, fresh(inputs, 12), grad=True))
            ops.run(module, fresh(inputs, 13), grad=False)
        return y

    def grads(self, s, ops, call, cotangents, wrt):
        more = s.state.get(id(call.outputs[0]), ())
        zeros = tuple(torch.zeros_like(o) for o in more)
        return ops.grad((*call.outputs, *more), wrt, (*cotangents, *zeros))


def _nan_buffer(t: torch.Tensor, rows: int) -> torch.Tensor:
    return torch.full((rows, t.shape[-1] if t.dim() else 1), float("nan"), dtype=t.dtype, device=t.device)


def _broadcast(g: torch.Tensor, whole: bool) -> torch.Tensor:
    """g's values (constant, or constant along the leading dims) as a stride-0 view of a NaN buffer's first
    element / row — what y.sum() hands a backward (a kernel that reads it as contiguous rows reads NaN)."""
    if g.dim() == 0:
        return g
    D, lead = g.shape[-1], tuple(g.shape[:-1])
    buf = _nan_buffer(g, max(2, g.numel() // max(1, D)))
    if whole:
        buf.view(-1)[0] = g.reshape(-1)[0]
        return buf.view(-1)[:1].reshape((1,) * g.dim()).expand(g.shape)
    buf[0] = g.reshape(-1, D)[0]
    return buf[:1].reshape(*(1,) * len(lead), D).expand(*lead, D)


class Cotangent(Protocol):
    """A cotangent of a given value structure handed to the backward in a given layout."""

    def __init__(self, name: str, summary: str, values: str, layout: Callable[[torch.Tensor], torch.Tensor]) -> None:
        self.name, self.summary, self.cotangents, self._layout = name, summary, values, layout

    def grads(self, s, ops, call, cotangents, wrt):
        return ops.grad(call.outputs, wrt, tuple(self._layout(g) for g in cotangents))


class Partial(Protocol):
    name = "partial"
    summary = "the input's gradient with the parameters frozen, the parameters' with the input detached"

    def grads(self, s, ops, call, cotangents, wrt):
        names = named(call, wrt)
        inputs = [t for t, n in zip(wrt, names, strict=True) if n.startswith("input")]
        params = [t for t, n in zip(wrt, names, strict=True) if not n.startswith("input")]
        got: dict[int, Any] = {}
        if inputs:
            trainable = [p for p in call.module.parameters() if p.requires_grad]
            ops.step(
                "freezing every parameter (requires_grad_(False))", lambda: [p.requires_grad_(False) for p in trainable]
            )
            try:
                outs = flat(ops.run(call.module, call.inputs, grad=True))
                got.update(zip(map(id, inputs), ops.grad(outs, inputs, cotangents), strict=True))
            finally:
                for p in trainable:
                    p.requires_grad_(True)
        if params:
            outs = flat(ops.run(call.module, tuple(t.detach() for t in call.inputs), grad=True))
            got.update(zip(map(id, params), ops.grad(outs, params, cotangents), strict=True))
        return [got.get(id(t)) for t in wrt]


class Checkpointed(Protocol):
    def __init__(self, reentrant: bool) -> None:
        self.reentrant = reentrant
        self.name = "checkpoint (reentrant)" if reentrant else "checkpoint"
        self.summary = f"torch.utils.checkpoint, use_reentrant={reentrant}"

    def forward(self, s, ops, module, inputs, grad):
        if not grad:
            return ops.run(module, inputs, grad=False)

        def via(m: nn.Module, *xs: torch.Tensor) -> Any:
            return torch.utils.checkpoint.checkpoint(m, *xs, use_reentrant=self.reentrant)

        return ops.run(module, inputs, grad=True, via=via)

    def grads(self, s, ops, call, cotangents, wrt):
        if self.reentrant:  # reentrant checkpointing supports .backward() without inputs only
            return _into_grad(ops, call.outputs, cotangents, wrt)
        return ops.grad(call.outputs, wrt, cotangents)


PLAIN = Protocol()
TRAIN, INFERENCE, SWITCHED, HELD = Train(), Inference(), Switched(), Held()
ALTERNATED, TIED, MOVED = Alternated(), Tied(), Moved()
ACCUMULATED, BETWEEN, PARTIAL = Accumulated(), Between(), Partial()
COTANGENT_SUM = Cotangent(
    "cotangent: sum", "ones with stride 0, as y.sum() hands them", "sum", lambda g: _broadcast(g, True)
)
COTANGENT_ROW = Cotangent("cotangent: row", "one row broadcast over the rows", "row", lambda g: _broadcast(g, False))
COTANGENT_TRANSPOSED = Cotangent(
    "cotangent: transposed", "in transposed storage", "random", lambda g: S.as_layout(g, "transposed")
)
COTANGENT_STRIDED = Cotangent(
    "cotangent: strided", "every other row of a NaN buffer", "random", lambda g: S.as_layout(g, "strided")
)
CHECKPOINT, CHECKPOINT_REENTRANT = Checkpointed(False), Checkpointed(True)

# In the order a pinned case runs them (simple ways first: a wrong implementation fails the simplest protocol that
# exposes it, before one that also re-runs it in other ways and may make it crash instead).
FORWARD: tuple[Protocol, ...] = (PLAIN, TRAIN, INFERENCE, HELD, SWITCHED, ALTERNATED, TIED, MOVED)
GRADIENT: tuple[Protocol, ...] = (
    PLAIN,
    TRAIN,
    ACCUMULATED,
    BETWEEN,
    COTANGENT_SUM,
    COTANGENT_ROW,
    COTANGENT_TRANSPOSED,
    COTANGENT_STRIDED,
    PARTIAL,
    CHECKPOINT_REENTRANT,
    SWITCHED,
    HELD,
    ALTERNATED,
    TIED,
    MOVED,
    CHECKPOINT,
)
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (*FORWARD, *GRADIENT)}
# The pinned runs (every protocol once, every profile) cost a golden evaluation each: they run in fp32 and bf16 —
# and a gradient law pins only the protocols about gradients (the forward ones it still draws, in every dtype), not
# the non-reentrant checkpoint either: its first use in a process imports torch._dynamo (1–5 s), so it is drawn only.
PIN_DTYPES = (torch.float32, torch.bfloat16)
PINNED: dict[tuple[Protocol, ...], tuple[Protocol, ...]] = {
    FORWARD: FORWARD[1:],
    GRADIENT: GRADIENT[GRADIENT.index(ACCUMULATED) : GRADIENT.index(ALTERNATED) + 1],
}


def _protocol_named(name: str) -> Protocol:
    return PROTOCOLS[name]


@dataclasses.dataclass(frozen=True)
class Pinned:
    """A protocol as a pin answers the law's "protocol" draw: run once, in PIN_DTYPES."""

    protocol: Protocol

    def __str__(self) -> str:
        return self.protocol.name


def honoured(
    family: Sequence[Protocol], pin: S.Pin | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a law's body (place it right above the ``def``): each example first draws a protocol of ``family``
    (label "protocol", shrinking to ``PLAIN``) and runs the body under it; with ``pin``, the pinned case also runs
    once under each protocol ``PINNED`` for the family, in the dtypes ``PIN_DTYPES`` (explicit examples: every
    profile, first)."""
    family = tuple(family)
    pinned = PINNED.get(family, family[1:])

    def decorate(body: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(body)
        def under_protocol(impl: Any, dtype: torch.dtype, device: str, data: Any) -> Any:
            protocol = data.draw(st.sampled_from(family), label="protocol") or PLAIN
            if isinstance(protocol, Pinned):  # a pinned run: in PIN_DTYPES only
                if dtype not in PIN_DTYPES:
                    context.count_examples(-1)  # not an example: it does not run
                    assume(False)
                protocol = protocol.protocol
            with under(protocol):
                return body(impl, dtype, device, data)

        under_protocol.protocols = family  # type: ignore[attr-defined]
        if pin is not None:
            for protocol in reversed(pinned):
                under_protocol = example(data=pin.under(Pinned(protocol)))(under_protocol)
        return under_protocol

    return decorate
