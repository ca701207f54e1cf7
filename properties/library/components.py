"""The component records: one :class:`Component` per module of the contract, read by every generic law family,
the harness, the diagnosis, the drop-ins (``properties.testing``) and the command line.

A record says what a component *is* to the verifier: its contract signature, its forward's inputs and outputs,
its parameters (the contract's state-dict names), the conventions it accepts, how to draw its cases, build it, call
it, and what the right answer is (golden value and derived bound, per output; the golden vector–Jacobian product
and its bounds). A law family written once over ``RECORDS`` applies to every component; where one does not, the
record says why (``not_applicable``: family → reason), and the generated matrix (``nanolm-verify check --list
--matrix``, docs/matrix.md) shows it.

Importing this module and :func:`names` import nothing heavy (no torch, no Hypothesis): the command line lists the
components from here while printing its help. The heavy parts (strategies, golden, bounds, harness) are imported
inside the methods, on first use.

A new component is one record (see docs/ARCHITECTURE.md, "Adding a component"): its case strategy, its golden and
bound functions per output, and its drop-in terms; :func:`register` adds it (a test adds a throwaway one so).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from properties.library.registry import RECORDS, names, record, register, unregister

__all__ = ["RECORDS", "Case", "Component", "names", "record", "register", "unregister"]


@dataclasses.dataclass(frozen=True)
class Case:
    """What every generic law needs, whatever the component: how to construct it (``args``, ``kwargs``), its state
    (``params``: the contract's state-dict names, values in the case's dtype), the inputs of one forward call (in
    ``Component.inputs`` order), and the component's own case (``native``: RMSNormCase, SwiGLUCase …)."""

    component: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    params: dict[str, Any]
    inputs: tuple[Any, ...]
    native: Any = None

    def describe(self) -> dict[str, Any]:
        """The case as ``harness.note`` reports it (the native case's own description when it has one)."""
        if self.native is not None and hasattr(self.native, "describe"):
            return dict(self.native.describe())
        x = self.inputs[0]
        return {"shape": tuple(x.shape), "D": x.shape[-1]}

    def with_inputs(self, inputs: tuple[Any, ...]) -> Case:
        """The same case with other inputs (the same values in another layout, moved to a device …)."""
        return dataclasses.replace(self, inputs=tuple(inputs))

    def with_params(self, params: Mapping[str, Any]) -> Case:
        return dataclasses.replace(self, params=dict(params))


@dataclasses.dataclass(frozen=True)
class Component:
    """One component of the contract. The callables take the record's :class:`Case`; they import what they use."""

    name: str  # the contract's class name
    signature: str  # "RMSNorm(dim: int, eps: float = 1e-6)": help texts, the matrix
    inputs: tuple[str, ...]  # forward's positional inputs
    outputs: tuple[str, ...]  # what forward returns, in order (one: a tensor; more: a tuple)
    params: tuple[str, ...]  # the contract's state-dict names
    conventions: tuple[str, ...]  # the typed CONVENTIONS keys it accepts (``conventions.parse`` validates values)
    summary: str  # one line: what it computes
    # the reference's arithmetic (the contract's defaults a declaration departs from; ``conventions`` reads them)
    compute: Mapping[str, str]  # input dtype name → the dtype the reference computes in
    # drawing and building
    draw: Callable[..., Any]  # (dtype, min_rows, max_dim, **native) -> SearchStrategy[Case]
    construct: Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]
    # ^ (params, options) -> (args, kwargs) of the constructor (options: eps, config … as the drop-in names them)
    golden_of: Callable[[Case, tuple[Any, ...]], tuple[Any, ...]]  # (case, inputs) -> one Golden per output
    bounds_of: Callable[..., tuple[Any, ...]]  # (case, inputs, dtype, **opts) -> one Bound per output
    vjp_of: Callable[..., dict[str, tuple[Any, Any]]] | None = None
    # ^ (case, cotangents, dtype) -> {input or param name: (expected, Bound)}: Golden expected (golden VJP) or a
    #   float64 array (the Block's fp64 derivative of the reference, baselines.py); None: no gradient oracle
    golden_vjp_of: Callable[[Case, tuple[Any, ...]], dict[str, Any]] | None = None  # the golden VJP, where one is
    builder: Callable[..., Any] | None = None  # (impl, case, params, dtype, device) -> module; None: harness.build
    # the drop-in (properties.testing): its positional terms after `actual`, their defaults, the params that are
    # a norm's gain (``offset=`` forms offset + w for these), how the terms become params and options
    terms: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    gains: tuple[str, ...] = ()
    from_terms: Callable[[Mapping[str, Any]], tuple[dict[str, Any], dict[str, Any]]] | None = None
    # ^ {term: value} -> (params by contract name, options for ``construct``)
    grad_names: Mapping[str, str] = dataclasses.field(default_factory=dict)  # contract name -> drop-in grads name
    not_applicable: Mapping[str, str] = dataclasses.field(default_factory=dict)  # family -> why it does not apply
    slug: str = ""  # its name in law ids and drop-ins ("add_rmsnorm"); empty: :func:`snake` of the name
    of_native: Callable[[Any], Case] | None = None  # the component's own case (a pinned example's) -> Case
    cheap: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # native draw options of a family that
    # calls the module a dozen times per example (the layout family): sizes that keep it within its cost
    wide: Callable[[Any], Any] | None = None  # (dtype) -> a native case of wide rows, pinned by the families
    pinned: Callable[[Any], Any] | None = None  # (dtype) -> a small native case of several rows, a non-zero mean,
    # weights of both signs (its protocol pin): stale state, another instance's weights or options move every value
    other_options: Callable[[Case], Case] | None = None  # the case with other constructor options of the same
    # sizes (eps; the Block: rope_theta and eps): a second instance a cache keyed by the sizes alone confuses
    limits: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)  # family -> {"dtypes": the
    # input dtype names it runs in, "cost": its cost}, where a family is too costly for this component otherwise
    causal: bool = False  # row t of a sequence depends on the rows ≤ t of that sequence (attention); False: every
    # output row on its own input row only (the diagnosis re-evaluates a prefix of tokens, or a few rows)
    paths: Callable[[], Mapping[str, Callable[[Any], Any]]] | None = None  # its code-path sizes: name -> (dtype)
    # -> ``strategies.PathCase`` (laws/paths.py: row counts and widths where kernels switch path); None: none
    domain: Callable[[Any], Any] | None = None  # (rows at the overflow threshold of their sum of squares: a
    # ``strategies.RMSNormCase`` of ``domain_cases``) -> its native case whose (first output's) norm reads exactly
    # those rows (laws/domain.py); None: no norm over its input rows
    corpus: str = ""  # the stored golden corpus's family of its cases (golden/data/<corpus>.json); empty: none
    stored: Callable[[Any], tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]] | None = None  # a stored case
    # (``golden.corpus.Case``; its golden value is the first output's) -> (inputs, params, options) for ``case``
    batch_invariant_on_cpu: str = ""  # why the reference's rows never depend on the batch on the CPU: the
    # batch-invariance laws then require it, bitwise, unless declared; empty: they measure and report it (a CPU
    # GEMM picks its kernel by the number of rows: ``nn.Linear`` is not batch-invariant)

    # ------------------------------------------------------------------------------------ generic access
    def cases(self, dtype: Any, *, min_rows: int = 1, max_dim: int | None = None, **native: Any) -> Any:
        """A Hypothesis strategy of Cases in ``dtype``: at least ``min_rows`` rows (tokens) of inputs, feature
        width ≤ ``max_dim`` where given; ``native``: the component's own strategy options."""
        return self.draw(dtype, min_rows=min_rows, max_dim=max_dim, **native)

    def as_case(self, drawn: Any) -> Case:
        """``drawn`` as a Case: a Case as it is, a native case (what a pinned example builds) through ``of_native``."""
        if isinstance(drawn, Case):
            return drawn
        if self.of_native is None:
            raise TypeError(f"{self.name}: a {type(drawn).__name__} is not a Case and the record reads no native case")
        return self.of_native(drawn)

    def case(self, inputs: tuple[Any, ...], params: Mapping[str, Any], native: Any = None, **options: Any) -> Case:
        """A Case from inputs, params (contract names) and the constructor's options (eps, config …)."""
        args, kwargs = self.construct(params, options)
        return Case(self.name, args, kwargs, dict(params), tuple(inputs), native)

    def build(self, impl: Any, case: Case, dtype: Any, device: str, *, params: Mapping[str, Any] | None = None):
        """The implementation's module for ``case`` (``params``: other values or views of the state to load),
        built, moved and loaded through ``harness.build`` (call protocols apply)."""
        __tracebackhide__ = True
        state = dict(case.params if params is None else params)
        if self.builder is not None:
            return self.builder(impl, case, state, dtype, device)
        from properties.library import harness

        return harness.build(impl, self.name, case.args, case.kwargs, state, dtype, device)

    def call(
        self, module: Any, inputs: tuple[Any, ...], *, grad: bool = False, check: bool = True, cause: str = "contract"
    ) -> tuple[Any, ...]:
        """module(*inputs) through ``harness.call`` → the outputs, always a tuple in ``outputs`` order. A result of
        another count is a contract failure; with ``check``, so is an output that does not keep the first input's
        shape, dtype and device (``cause``: the law about exactly that names its own)."""
        __tracebackhide__ = True
        from properties.library import harness
        from properties.library.assertions import assert_output_contract, fail

        out = harness.call(module, *inputs, component=self.name, grad=grad)
        if len(self.outputs) == 1:
            outs = (out,)
        elif isinstance(out, (tuple, list)) and len(out) == len(self.outputs):
            outs = tuple(out)
        else:
            got = f"{len(out)} values" if isinstance(out, (tuple, list)) else type(out).__name__
            fail(f"{self.name}.forward returned {got}, not the tuple ({', '.join(self.outputs)})", "contract")
        if check:
            x = inputs[0]
            for name, o in zip(self.outputs, outs, strict=True):
                what = f"{self.name} output" + (f" {name}" if len(self.outputs) > 1 else "")
                assert_output_contract(o, shape=tuple(x.shape), dtype=x.dtype, device=x.device, what=what, cause=cause)
        return outs

    def forward(
        self,
        impl: Any,
        case: Case,
        dtype: Any,
        device: str,
        *,
        inputs: tuple[Any, ...] | None = None,
        params: Mapping[str, Any] | None = None,
        grad: bool = False,
        output_cause: str = "contract",
    ) -> tuple[Any, ...]:
        """Build the module for ``case`` and call it once on ``inputs`` (default: the case's), moved to ``device``."""
        __tracebackhide__ = True
        module = self.build(impl, case, dtype, device, params=params)
        given = case.inputs if inputs is None else inputs
        return self.call(module, tuple(t.to(device) for t in given), grad=grad, cause=output_cause)

    def golden(self, case: Case, inputs: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
        """The golden value of every output (``golden``: exact evaluation of the exact inputs)."""
        return tuple(self.golden_of(case, tuple(case.inputs if inputs is None else inputs)))

    def bounds(self, case: Case, dtype: Any, inputs: tuple[Any, ...] | None = None, **opts: Any) -> tuple[Any, ...]:
        """The derived bound of every output in ``dtype``; ``inputs`` replaces the case's (the same values in
        another layout); ``opts``: ``random_weights`` (SwiGLU, Block: the case's weights are the law's random
        draw), ``drawn`` (the probabilistic tier where the bound has one)."""
        return tuple(self.bounds_of(case, tuple(case.inputs if inputs is None else inputs), dtype, **opts))

    def golden_vjp(self, case: Case, cotangents: tuple[Any, ...]) -> dict[str, Any] | None:
        """{input or param name: Golden} of the vector–Jacobian product for one cotangent per output (None: that
        output unused, a zero cotangent); None where the component has no golden VJP (the Block: ``vjp``)."""
        if self.golden_vjp_of is None:
            return None
        return self.golden_vjp_of(case, self._cotangents(case, cotangents))

    def vjp(
        self, case: Case, cotangents: tuple[Any, ...], dtype: Any, **opts: Any
    ) -> dict[str, tuple[Any, Any]] | None:
        """{input or param name: (expected, Bound)} of the gradients in ``dtype``: the golden VJP and its derived
        bound, or (Block) the fp64 derivative of the reference and the same-dtype baselines' bound; ``opts``:
        ``drawn`` (the probabilistic tier where the bound has one)."""
        if self.vjp_of is None:
            return None
        return self.vjp_of(case, self._cotangents(case, cotangents), dtype, **opts)

    @property
    def differentiable(self) -> tuple[str, ...]:
        """The names a gradient is taken for: every input, then every parameter."""
        return (*self.inputs, *self.params)

    def dropin(self, kind: str = "close") -> str:
        """The name of its drop-in assertion in ``properties.testing`` ("close" or "grads_close")."""
        return f"assert_{self.snake}_{kind}"

    @property
    def snake(self) -> str:
        """Its name in law ids and drop-ins: "rmsnorm", "swiglu", "add_rmsnorm"."""
        return self.slug or snake(self.name)

    def _cotangents(self, case: Case, cotangents: tuple[Any, ...]) -> tuple[Any, ...]:
        import torch

        if len(cotangents) != len(self.outputs):
            raise ValueError(f"{self.name}: {len(cotangents)} cotangents for the outputs ({', '.join(self.outputs)})")
        x = case.inputs[0]
        return tuple(torch.zeros(x.shape, dtype=x.dtype) if g is None else g for g in cotangents)


def snake(name: str) -> str:
    """A name as law ids spell it, "AddRMSNorm" → "add_rmsnorm": a word starts at a capital after a small
    letter (a record whose name reads otherwise sets ``slug``: "SwiGLU" → "swiglu")."""
    out, prev_lower = [], False
    for ch in name:
        if ch.isupper() and prev_lower:
            out.append("_")
        out.append(ch.lower())
        prev_lower = ch.islower()
    return "".join(out)


# ==================================================================================================== the records
# Shared pieces. ``_rows(n)``: a batch shape of at least n rows, as (N,) or (B, T) (a wrong row pitch shows only
# from the second row on).
_NORM_KEYS = (
    "compute_dtype",
    "eps_dtype",
    "eps_placement",
    "flush_subnormals",
    "weight_offset",
    "roundings",
    "reduction",
    "accumulation_dtype",
    "dtypes",
    "eps_default",
    "batch_invariant",
)
_LINEAR_KEYS = ("compute_dtype", "flush_subnormals", "reduction", "accumulation_dtype", "dtypes", "batch_invariant")


# The reference's compute dtype per input dtype (DESIGN: the norms upcast 16-bit input to fp32; SwiGLU and the
# Block's projections run in the module dtype, their matmuls accumulating in fp32).
_UPCAST = {"fp64": "fp64", "fp32": "fp32", "fp16": "fp32", "bf16": "fp32"}
_MODULE_DTYPE = {"fp64": "fp64", "fp32": "fp32", "fp16": "fp16", "bf16": "bf16"}


def _batch(min_rows: int) -> Any:
    from hypothesis import strategies as st

    n = max(2, min_rows)
    return st.integers(n, n + 3).map(lambda k: (k,)) | st.tuples(st.integers(1, 2), st.integers(n, n + 1))


def _norm_options(params: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (params["weight"].shape[-1],), {"eps": float(options.get("eps", 1e-6))}


def _strategies() -> Any:
    from properties.library import strategies

    return strategies


def _eps(case: Case) -> float:
    return float(case.kwargs["eps"])


def _other_eps(case: Case) -> Case:
    """The case with another eps: 1e-2, or 1e-5 where it is 1e-2."""
    eps = 1e-2 if _eps(case) != 1e-2 else 1e-5
    return dataclasses.replace(case, kwargs={**case.kwargs, "eps": eps}, native=None)


# ---------------------------------------------------------------------------------------------- RMSNorm
def _rmsnorm_of(c: Any) -> Case:
    return Case("RMSNorm", (c.weight.shape[-1],), {"eps": c.eps}, {"weight": c.weight}, (c.x,), c)


def _row_draw(strategy: str, of: Callable[[Any], Case]) -> Callable[..., Any]:
    """The ``draw`` of a row-wise component: its native strategy ``strategies.<strategy>`` mapped through ``of``,
    with a batch shape of at least ``min_rows`` rows drawn first where more than one is asked for."""

    def draw_cases(dtype: Any, *, min_rows: int, max_dim: int | None, **native: Any) -> Any:
        from hypothesis import strategies as st

        from properties.library import strategies as S

        cases = getattr(S, strategy)
        if min_rows <= 1:
            return cases(dtype, max_dim=max_dim, **native).map(of)

        @st.composite
        def drawn(draw: Any) -> Case:
            batch = draw(_batch(min_rows), label="batch shape")
            return of(draw(cases(dtype, max_dim=max_dim, batch=batch, **native), label="case"))

        return drawn()

    return draw_cases


_rmsnorm_draw = _row_draw("rmsnorm_cases", _rmsnorm_of)


def _rmsnorm_golden(case: Case, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    import golden

    return (golden.rmsnorm(inputs[0], case.params["weight"], _eps(case)),)


def _rmsnorm_bounds(case: Case, inputs: tuple[Any, ...], dtype: Any, *, drawn: bool = False, **_: Any):
    from properties.numerics import bounds

    return (bounds.rmsnorm(inputs[0], case.params["weight"], _eps(case), dtype, drawn=drawn),)


def _rmsnorm_golden_vjp(case: Case, cotangents: tuple[Any, ...]) -> dict[str, Any]:
    import golden

    dx, dw = golden.rmsnorm_vjp(case.inputs[0], case.params["weight"], _eps(case), cotangents[0])
    return {"x": dx, "weight": dw}


def _rmsnorm_vjp(
    case: Case, cotangents: tuple[Any, ...], dtype: Any, *, drawn: bool = False
) -> dict[str, tuple[Any, Any]]:
    from properties.numerics import bounds

    gold = _rmsnorm_golden_vjp(case, cotangents)
    x, w, g = case.inputs[0], case.params["weight"], cotangents[0]
    bx, bw = bounds.rmsnorm_vjp(x, w, _eps(case), g, dtype, drawn=drawn)
    return {"x": (gold["x"], bx), "weight": (gold["weight"], bw)}


register(
    Component(
        name="RMSNorm",
        signature="RMSNorm(dim: int, eps: float = 1e-6)",
        inputs=("x",),
        outputs=("y",),
        params=("weight",),
        conventions=_NORM_KEYS,
        summary="y = x / √(mean(x², −1) + eps) ⊙ weight",
        compute=_UPCAST,
        draw=_rmsnorm_draw,
        construct=_norm_options,
        golden_of=_rmsnorm_golden,
        bounds_of=_rmsnorm_bounds,
        vjp_of=_rmsnorm_vjp,
        golden_vjp_of=_rmsnorm_golden_vjp,
        terms=("x", "weight", "eps"),
        defaults={"eps": 1e-6},
        gains=("weight",),
        from_terms=lambda t: ({"weight": t["weight"]}, {"eps": t["eps"]}),
        of_native=_rmsnorm_of,
        pinned=lambda dtype: _strategies().RMSNORM_PROTOCOL_PIN.build(dtype),
        other_options=_other_eps,
        wide=lambda dtype: _strategies().RMSNORM_PINS["wide rows, D=512"].build(dtype),
        paths=lambda: _strategies().RMSNORM_PATHS,
        domain=lambda c: c,
        corpus="rmsnorm",
        stored=lambda c: ((c.tensor("x"),), {"weight": c.tensor("weight")}, {"eps": c.params["eps"]}),
        batch_invariant_on_cpu="a row's RMSNorm is its own reduction on the CPU (torch's F.rms_norm is "
        "batch-invariant)",
    )
)


# ---------------------------------------------------------------------------------------------- SwiGLU
_FFN = ("w_gate", "w_up", "w_down")
_SWIGLU_PARAMS = tuple(f"{n}.weight" for n in _FFN)


def _swiglu_of(c: Any) -> Case:
    F, D = c.w_gate.shape
    return Case("SwiGLU", (D, F), {}, dict(c.params), (c.x,), c)


def _swiglu_draw(dtype: Any, *, min_rows: int, max_dim: int | None, **native: Any) -> Any:
    from properties.library import strategies as S

    of = _swiglu_of
    opts = {"max_dim": max_dim} if max_dim is not None else {}
    return S.swiglu_cases(dtype, min_rows=max(1, min_rows), **opts, **native).map(of)


def _swiglu_weights(case: Case) -> list[Any]:
    return [case.params[n] for n in _SWIGLU_PARAMS]


def _swiglu_golden(case: Case, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    import golden

    return (golden.swiglu(inputs[0], *_swiglu_weights(case)),)


def _swiglu_bounds(case: Case, inputs: tuple[Any, ...], dtype: Any, *, random_weights: bool = False, **_: Any):
    from properties.numerics import bounds

    return (bounds.swiglu(inputs[0], *_swiglu_weights(case), dtype, random_weights=random_weights),)


def _swiglu_golden_vjp(case: Case, cotangents: tuple[Any, ...]) -> dict[str, Any]:
    import golden

    grads = golden.swiglu_vjp(case.inputs[0], *_swiglu_weights(case), cotangents[0])
    return dict(zip(("x", *_SWIGLU_PARAMS), grads, strict=True))


def _swiglu_vjp(case: Case, cotangents: tuple[Any, ...], dtype: Any, **_: Any) -> dict[str, tuple[Any, Any]]:
    from properties.numerics import bounds

    gold = _swiglu_golden_vjp(case, cotangents)
    b = bounds.swiglu_vjp(case.inputs[0], *_swiglu_weights(case), cotangents[0], dtype)
    return {k: (gold[k], bk) for k, bk in zip(("x", *_SWIGLU_PARAMS), b, strict=True)}


def _swiglu_construct(params: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict]:
    F, D = params["w_gate.weight"].shape
    return (D, F), {}


register(
    Component(
        name="SwiGLU",
        signature="SwiGLU(dim: int, hidden_dim: int)",
        inputs=("x",),
        outputs=("y",),
        params=_SWIGLU_PARAMS,
        conventions=_LINEAR_KEYS,
        summary="y = W_down (silu(W_gate x) ⊙ W_up x), nn.Linear layouts, no bias",
        compute=_MODULE_DTYPE,
        draw=_swiglu_draw,
        construct=_swiglu_construct,
        golden_of=_swiglu_golden,
        bounds_of=_swiglu_bounds,
        vjp_of=_swiglu_vjp,
        golden_vjp_of=_swiglu_golden_vjp,
        terms=("x", *_FFN),
        from_terms=lambda t: ({f"{n}.weight": t[n] for n in _FFN}, {}),
        grad_names={f"{n}.weight": n for n in _FFN},
        slug="swiglu",
        of_native=_swiglu_of,
        pinned=lambda dtype: _strategies().SWIGLU_PROTOCOL_PIN.build(dtype),
        paths=lambda: _strategies().SWIGLU_PATHS,
        corpus="swiglu",
        stored=lambda c: ((c.tensor("x"),), {f"{n}.weight": c.tensor(n) for n in _FFN}, {}),
        cheap={"max_dim": 128},
        not_applicable={
            "domain": "no domain limit of its own: W·x overflows only where the dtype's range does, and the bound "
            "marks those rows not judged",
        },
    )
)


# ---------------------------------------------------------------------------------------------- Block
_BLOCK_PARAMS = (
    "attn_norm.weight",
    "ffn_norm.weight",
    "attn.wq.weight",
    "attn.wk.weight",
    "attn.wv.weight",
    "attn.wo.weight",
    "ffn.w_gate.weight",
    "ffn.w_up.weight",
    "ffn.w_down.weight",
)


def _block_draw(dtype: Any, *, min_rows: int, max_dim: int | None, **native: Any) -> Any:
    import torch

    from properties.library import strategies as S

    def of(c: Any) -> Case:
        x = c.x
        while x.shape[0] * x.shape[1] < min_rows:  # enough tokens: a row pitch matters from the second on
            x = torch.cat([x, x.flip(-1)], dim=1)[:, : c.config.max_seq_len]
            if x.shape[1] == c.config.max_seq_len:
                break
        return _block_of(c._replace(x=x))

    opts = {"max_dim": max_dim} if max_dim is not None else {}
    return S.block_cases(dtype, **opts, **native).map(of)


def _block_of(c: Any) -> Case:
    return Case("Block", (c.config,), {}, dict(c.params), (c.x,), c)


def _config(case: Case) -> Any:
    return case.args[0]


def _block_golden(case: Case, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    import golden

    return (golden.block(inputs[0], case.params, _config(case)),)


def _block_bounds(
    case: Case,
    inputs: tuple[Any, ...],
    dtype: Any,
    *,
    random_weights: bool = False,
    drawn: bool = False,
    tokens: Any = None,
    **_: Any,
):
    """``tokens``: the positions judged (a long sequence's sample; None: every one)."""
    from properties.numerics import bounds

    x, config = inputs[0], _config(case)
    return (bounds.block(x, case.params, config, dtype, random_weights=random_weights, drawn=drawn, tokens=tokens),)


def _block_vjp(case: Case, cotangents: tuple[Any, ...], dtype: Any, **_: Any) -> dict[str, tuple[Any, Any]]:
    """The Block laws' oracle: the fp64 derivative of the reference, within twice the largest error of the
    reference computed in ``dtype`` in several ways (``baselines``) plus a few roundings (``bounds.block_vjp``)."""
    import torch

    from properties.library import baselines
    from properties.numerics import bounds

    x, config, names = case.inputs[0], _config(case), list(case.params)
    g = cotangents[0]
    exact = baselines.block_grads(config, case.params, x, g, torch.float64, names, members=1)[0]
    refs = baselines.block_grads(config, case.params, x, g, dtype, names, members=None)
    out = {}
    for key in ("x", *names):
        rows = x.shape[-2] if key == "x" else x.numel() // x.shape[-1]
        out[key] = (exact[key], bounds.block_vjp([r[key] for r in refs], exact[key], config, rows, dtype))
    return out


def _other_rope(case: Case) -> Case:
    """The case with a RoPE base far from its own (the angles past position 0 differ by far more than the bound's
    reach) and another norm eps."""
    c = _config(case)
    theta, eps = 10.0 if c.rope_theta >= 1000.0 else 10000.0, 1e-5 if c.norm_eps != 1e-5 else 1e-6
    return dataclasses.replace(case, args=(dataclasses.replace(c, rope_theta=theta, norm_eps=eps),), native=None)


def _block_build(impl: Any, case: Case, params: dict[str, Any], dtype: Any, device: str) -> Any:
    """Block(config) with ``params`` loaded (``harness.build``), seen through ``rope_layout.RopeLayout`` when the
    implementation declares ``rope_layout: "interleaved"``: the laws judge the contract's rotate-half function."""
    from properties.library import context, harness

    wrap = None
    if impl.conventions[case.component].rope_layout == "interleaved":
        from properties.library.rope_layout import RopeLayout

        def wrap(module: Any) -> Any:
            seen = RopeLayout(module, _config(case))
            context.record_build(seen, case.component, case.args, case.kwargs)
            return seen

    return harness.build(impl, case.component, case.args, case.kwargs, params, dtype, device, wrap=wrap)


def _block_terms(t: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    params = t["params"]
    state = params.state_dict() if hasattr(params, "state_dict") else dict(params)
    return state, {"config": t["config"]}


register(
    Component(
        name="Block",
        signature="Block(config: ModelConfig)",
        inputs=("x",),
        outputs=("out",),
        params=_BLOCK_PARAMS,
        conventions=(*_NORM_KEYS, "rope_layout"),
        summary="pre-norm transformer block: h = x + attn(RMSNorm(x)), out = h + SwiGLU(RMSNorm(h)); causal GQA, "
        "rotate-half RoPE",
        compute=_MODULE_DTYPE,
        causal=True,
        draw=_block_draw,
        construct=lambda params, options: ((options["config"],), {}),
        golden_of=_block_golden,
        bounds_of=_block_bounds,
        vjp_of=_block_vjp,
        golden_vjp_of=None,
        builder=_block_build,
        terms=("x", "params", "config"),
        gains=("attn_norm.weight", "ffn_norm.weight"),
        from_terms=_block_terms,
        of_native=_block_of,
        pinned=lambda dtype: _strategies().BLOCK_PROTOCOL_PIN.build(dtype),
        paths=lambda: _strategies().BLOCK_PATHS,
        corpus="block",
        stored=lambda c: ((c.tensor("x"),), {k: c.tensor(k) for k in _BLOCK_PARAMS}, {"config": c.config}),
        other_options=_other_rope,
        limits={"lifecycle": {"dtypes": ("fp32",), "cost": 8}},  # a dozen golden Blocks per example: 25 s in ci
        cheap={"max_dim": 32, "max_tokens": 4},
        not_applicable={
            "domain": "its norms' limit is RMSNorm's (rmsnorm_is_exact_up_to_the_overflow_threshold); past it the "
            "residual stream itself leaves the dtype's range",
        },
    )
)


# ---------------------------------------------------------------------------------------------- AddRMSNorm
def _add_of(c: Any) -> Case:
    return Case("AddRMSNorm", (c.weight.shape[-1],), {"eps": c.eps}, {"weight": c.weight}, (c.x, c.residual), c)


_add_draw = _row_draw("add_rmsnorm_cases", _add_of)


def _add_domain(c: Any) -> Any:
    """Rows at the threshold as the stream, the branch zero: h = 0 + r is the rows exactly, the norm reads them."""
    import torch

    from properties.library import strategies as S

    return S.AddRMSNormCase(torch.zeros_like(c.x), c.x, c.weight, c.eps, c.kinds, "zero", c.gamma)


def _add_golden(case: Case, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    import golden

    return tuple(golden.add_rmsnorm(inputs[0], inputs[1], case.params["weight"], _eps(case)))


def _add_bounds(case: Case, inputs: tuple[Any, ...], dtype: Any, *, drawn: bool = False, **_: Any):
    from properties.numerics import bounds

    return tuple(bounds.add_rmsnorm(inputs[0], inputs[1], case.params["weight"], _eps(case), dtype, drawn=drawn))


def _add_golden_vjp(case: Case, cotangents: tuple[Any, ...]) -> dict[str, Any]:
    import golden

    x, r = case.inputs
    d, dw = golden.add_rmsnorm_vjp(x, r, case.params["weight"], _eps(case), *cotangents)
    return {"x": d, "residual": d, "weight": dw}  # x and the residual receive one gradient


def _add_vjp(case: Case, cotangents: tuple[Any, ...], dtype: Any, **_: Any) -> dict[str, tuple[Any, Any]]:
    from properties.numerics import bounds

    gold = _add_golden_vjp(case, cotangents)
    x, r = case.inputs
    bd, bw = bounds.add_rmsnorm_vjp(x, r, case.params["weight"], _eps(case), *cotangents, dtype)
    return {"x": (gold["x"], bd), "residual": (gold["residual"], bd), "weight": (gold["weight"], bw)}


register(
    Component(
        name="AddRMSNorm",
        signature="AddRMSNorm(dim: int, eps: float = 1e-6)",
        inputs=("x", "residual"),
        outputs=("y", "h"),
        params=("weight",),
        conventions=(*_NORM_KEYS, "norm_input"),
        summary="(y, h) = (RMSNorm(x + residual), x + residual): the residual add and the next pre-norm, fused",
        compute=_UPCAST,
        draw=_add_draw,
        construct=_norm_options,
        golden_of=_add_golden,
        bounds_of=_add_bounds,
        vjp_of=_add_vjp,
        golden_vjp_of=_add_golden_vjp,
        terms=("x", "residual", "weight", "eps"),
        defaults={"eps": 1e-6},
        gains=("weight",),
        from_terms=lambda t: ({"weight": t["weight"]}, {"eps": t["eps"]}),
        of_native=_add_of,
        pinned=lambda dtype: _strategies().ADD_RMSNORM_PINS["every protocol"].build(dtype),
        other_options=_other_eps,
        wide=lambda dtype: _strategies().ADD_RMSNORM_PINS["wide rows, D=1024"].build(dtype),
        paths=lambda: _strategies().ADD_RMSNORM_PATHS,
        domain=_add_domain,
        corpus="add_rmsnorm",
        stored=lambda c: (
            (c.tensor("x"), c.tensor("residual")),
            {"weight": c.tensor("weight")},
            {"eps": c.params["eps"]},
        ),
    )
)
