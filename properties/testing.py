"""Drop-in assertions for your own kernel tests, called as ``torch.testing.assert_close`` is called.

    from properties.testing import assert_rmsnorm_close, assert_rmsnorm_grads_close

    def test_my_kernel():
        x = torch.randn(8, 4096, dtype=torch.bfloat16, requires_grad=True)
        w = (torch.rand(4096) + 0.5).to(torch.bfloat16).requires_grad_()
        y = my_rms_norm(x, w, 1e-6)
        assert_rmsnorm_close(y, x, w, eps=1e-6)
        g = torch.randn_like(y)
        y.backward(g)
        assert_rmsnorm_grads_close((x.grad, w.grad), x, w, g, eps=1e-6)

One pair per component, generated from its record (``properties.library.components``): ``assert_rmsnorm_close``,
``assert_swiglu_close``, ``assert_block_close``, ``assert_add_rmsnorm_close`` and their ``…_grads_close``. Each
takes the output (for AddRMSNorm the pair ``(y, h)``; None for an output not to check) and the component's inputs
and weights, computes the golden value (``golden``: exact / ≥ 100-bit evaluation of the exact float inputs) and
the derived bound (``properties.numerics.bounds``: a formula in the unit roundoffs and the shape that admits every
accepted convention), and fails as the laws do: a headline (the assertion, the dtype, the ULP error against the
bound at the worst element and the headroom), the worst element (golden, actual, allowed), the bound's formula, the
input, a diagnosis — the declaration that would fit, written as a ``conventions={...}`` value ready to paste — and a
line that reruns the test. Each returns the max ULP error (for reporting, e.g. in a benchmark). A failure raises
:class:`VerificationError` (an ``AssertionError``); an output of the wrong shape, dtype or device raises its
subclass :class:`OutputContractError`.

Options, as ``torch.testing.assert_close`` has them:

* ``msg``: a string — the failure's headline, the assertion's own message below it — or a callable that gets
  the generated message and returns the one to raise;
* ``check_dtype``: True (default) — the output (a gradient) must have the dtype of its input (parameter);
  False — any dtype, judged in the dtype it has (a bf16 input normalised into an fp32 output is judged as fp32);
* ``conventions``: how the kernel computes, with the typed keys its component accepts
  (``properties.library.conventions``: ``compute_dtype``, ``eps_dtype``, ``weight_offset``, ``flush_subnormals``,
  ``accumulation_dtype`` …): the bound is derived for that arithmetic, so the kernel is judged at the precision
  it declares — not excused (a Liger-style ``casting_mode="none"`` RMSNorm: ``{"compute_dtype": "input"}``).
  A description key (free text: ``compute``, ``notes`` …) or a key the component does not take is an error;
* ``offset`` (the norms, and the Block's two norms): the kernel's own terms for a gain stored as ``w`` and applied
  as ``offset + w`` (Liger's ``offset=1.0``, Gemma's ``1 + w``). Pass the tensor the kernel *stores* as the
  weight; the assertion judges against the gain ``offset + w`` (formed in fp64) and models its rounding. In a
  drop-in ``conventions={"weight_offset": o}`` says the same.

Gradients: ``grads`` is a tuple in the order of the inputs, then the weights (or a mapping by name: "x", "weight";
"x", "w_gate" …; "x", "residual", "weight"; for the Block the state-dict names); a gradient given as None is not
checked. ``grad_out`` is the cotangent (AddRMSNorm: ``(grad_y, grad_h)``, None for an unused output). The norms and
SwiGLU are judged against golden vector–Jacobian products and their derived bounds, the Block against the fp64
derivative of the reference within twice the largest error of the reference computed in the same dtype in several
ways (``properties.library.baselines``) plus a few roundings at its scale (``bounds.block_vjp``).
"""

from __future__ import annotations

import difflib
import inspect
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from properties.library import components, context, diagnosis
from properties.library.assertions import (
    WIDTH,
    assert_close,
    assert_matches_golden,
    assert_output_contract,
    golden_agreement,
    layout,
)
from properties.library.conventions import DESCRIPTIONS, ConventionError, Conventions, parse, typed_key
from properties.numerics import bounds

__all__ = ["OutputContractError", "VerificationError"]  # the assertions are added below, one pair per component

Msg = str | Callable[[str], str] | None
# pytest prints an assertion's message behind "E" and 7 spaces: wrapped at 72 columns it fits 80 there
_WIDTH = WIDTH - 8
_OFFSETS = (1.0,)  # gain offsets a failure is re-judged with when none was given (Gemma's, Liger's offset=1.0)


class VerificationError(context.LawFailure):
    """A drop-in assertion failed: the kernel's result is out of the derived bound of the golden value (an
    ``AssertionError``). ``suggestion``: the ``conventions={...}`` value that would fit, when one does."""

    suggestion: str | None = None


class OutputContractError(VerificationError, context.ContractFailure):
    """The output (or a gradient) does not have its input's shape, dtype or device."""


def _repro() -> str:
    """The pytest command that reruns the calling test (from $PYTEST_CURRENT_TEST), else a hint."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    node = current.rsplit(" (", 1)[0]
    return f"pytest {shlex.quote(node)}" if node else "rerun the calling test"


def literal(value: Any) -> str:
    """A declaration as Python source, ready to paste: ``{"compute_dtype": {"bf16": "bf16"}, "weight_offset": 1.0}``."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple, frozenset, set)):
        return (
            "[" + ", ".join(literal(v) for v in (sorted(value) if isinstance(value, (set, frozenset)) else value)) + "]"
        )
    return f'"{value}"' if isinstance(value, str) else repr(value)


# ---------------------------------------------------------------------------------------------- declarations


def _raw_conventions(name: str, rec: components.Component, conventions: Any) -> dict[str, Any]:
    """``conventions=`` checked key by key against what the component takes: one line naming the typed key."""
    if conventions is None:
        return {}
    if not isinstance(conventions, Mapping):
        raise ValueError(f"{name}: conventions= must be a dict {{key: value}}, not {type(conventions).__name__}")
    for key in conventions:
        if key in DESCRIPTIONS:
            typed = typed_key(key)
            which = f"the typed key is {typed!r}" if typed in rec.conventions else f"{rec.name} takes typed keys only"
            raise ValueError(f"{name}: conventions= {key!r} is free text and changes nothing; {which}")
        if key not in rec.conventions:
            close = difflib.get_close_matches(str(key), rec.conventions, n=1)
            owners = [r.name for r in components.RECORDS.values() if key in r.conventions]
            if owners:
                hint = f"a convention of {', '.join(owners)}, not of {rec.name}"
            else:
                hint = f"did you mean {close[0]!r}?" if close else f"{rec.name}'s keys: help({name})"
            raise ValueError(f"{name}: conventions= unknown key {key!r}; {hint}")
    return dict(conventions)


def _offset(name: str, rec: components.Component, offset: float | None, raw: dict[str, Any]) -> float | None:
    declared = raw.get("weight_offset")
    if offset is None:
        offset = declared
    elif declared is not None and float(declared) != float(offset):
        raise ValueError(f"{name}: offset={offset!r} and conventions weight_offset={declared!r} disagree")
    return None if offset is None or float(offset) == 0.0 else float(offset)


def _parsed(name: str, rec: components.Component, raw: dict[str, Any], offset: float | None) -> Conventions:
    try:
        return parse(rec.name, {**raw, **({"weight_offset": offset} if offset else {})})
    except ConventionError as exc:
        text = str(exc).replace(f"CONVENTIONS[{rec.name!r}]", "conventions=")
        raise ValueError(f"{name}: {text}") from None


def _with_gains(params: dict[str, Any], gains: Sequence[str], offset: float | None) -> dict[str, Any]:
    """The contract's gain offset + w (in fp64) for each stored gain w, when the kernel applies an offset."""
    if not offset:
        return params
    return {k: (v.detach().to(torch.float64) + offset if k in gains else v) for k, v in params.items()}


# ---------------------------------------------------------------------------------------------- judging


class _Judged:
    """One assertion call: the context the comparisons record into (the regime, the declared arithmetic), the
    message the caller asked for (``msg``), and what a failure would fit (``suggest``, run only on a failure)."""

    def __init__(self, name: str, component: str, x: torch.Tensor, dtype: torch.dtype, msg: Msg, declared: Any):
        self.name, self.msg, self.declared = name, msg, declared
        self.suggest: Callable[[context.LawContext], list[str]] = lambda ctx: []
        self.ctx = context.LawContext(name, component, dtype, x.device.type, "-", False, None, _repro(),
                                      conventions=declared)  # fmt: skip

    def __enter__(self) -> _Judged:
        self._open = context.open_context(self.ctx)
        self._open.__enter__()
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        __tracebackhide__ = True
        self._open.__exit__(kind, exc, tb)
        if not isinstance(exc, context.LawFailure):
            return
        extra = [f"declared: {self.declared.summary()}"] if self.declared and self.declared.summary() else []
        suggested: list[str] = []
        if not isinstance(exc, context.ContractFailure):
            try:
                suggested = self.suggest(self.ctx)
            except Exception as err:  # a bug of the diagnosis never hides the failure
                suggested = [f"diagnosis: not made ({type(err).__name__}: {err})"]
        headline = f"{self.name} [{self.ctx.dtype_name}, {self.ctx.device}]: {exc.headline}"
        details = [*exc.details, *extra, *suggested]
        cls = OutputContractError if isinstance(exc, context.ContractFailure) else VerificationError
        lead = len(f"{cls.__module__}.{cls.__qualname__}: ")  # pytest prints "Type: " before it
        if self.msg is None or callable(self.msg):
            text = layout(headline, details, exc.reproduce, width=_WIDTH, lead=lead)
            text = self.msg(text) if callable(self.msg) else text
        else:  # the caller's headline, the assertion's below it
            text = layout(str(self.msg), [headline, *details], exc.reproduce, width=_WIDTH, lead=lead)
        failure = cls(text)
        failure.headline, failure.details, failure.reproduce = exc.headline, details, exc.reproduce
        failure.cause = exc.cause
        failure.suggestion = next((s.split(": ", 1)[1] for s in suggested if s.startswith("paste: ")), None)
        said = f"{self.msg}: " if isinstance(self.msg, str) else ""
        failure.brief = f"{said}{headline} — reproduce: {exc.reproduce}"  # one line (the pytest plugin's summary)
        raise failure from None


def _judgeable(bound: Any, name: str, what: str) -> Any:
    """``bound`` unless it judges no element at all (infinite everywhere): an assertion that checks nothing is an
    error, never a pass."""
    if not np.isfinite(bound.abs).any():
        raise ValueError(
            f"{name}: no element of {what} can be judged: the derived bound is infinite everywhere (an intermediate "
            f"may overflow, or the declared arithmetic admits no bound at this size): {bound.formula}"
        )
    return bound


def _suggestion(raw: Mapping[str, Any], fits: Mapping[str, Any], why: str) -> list[str]:
    merged = {**raw, **fits}
    return [f"diagnosis: {why}", f"paste: conventions={literal(merged)}"]


def _offset_fits(fits: Callable[[dict[str, Any], Conventions], bool], params: dict[str, Any], rec: components.Component,
                 raw: dict[str, Any], offset: float | None) -> list[str]:  # fmt: skip
    """Re-judge a failure as a kernel that applies its stored gain as offset + w (when no offset was given)."""
    if offset or not rec.gains:
        return []
    for o in _OFFSETS:
        declared = parse(rec.name, {**raw, "weight_offset": o})
        if fits(_with_gains(params, rec.gains, o), declared):
            why = f"consistent with a kernel that applies the weight given as the gain {o:g} + w (Gemma's 1 + w)"
            return _suggestion(raw, {"weight_offset": o}, f"{why}; or pass offset={o!r}")
    return []


def _diagnosed(rec: components.Component, case: components.Case, outs: tuple[Any, ...], declared: Conventions,
               raw: dict[str, Any], ctx: context.LawContext, name: str) -> list[str]:  # fmt: skip
    """The library's diagnosis of the one call the assertion judged (recorded as ``context.record_call`` records a
    call: x, input_1 …, y or the tuple of outputs), as a line and, for a convention, the ``conventions=`` to paste."""
    if "diagnosis" in rec.not_applicable or any(o is None for o in outs):
        return []
    inputs = {("x" if i == 0 else f"input_{i}"): t.detach().cpu() for i, t in enumerate(case.inputs)}
    given = {"y": outs[0].detach().cpu()} if len(outs) == 1 else {"outputs": tuple(o.detach().cpu() for o in outs)}
    call = {"component": rec.name, **inputs, **given, "state": {k: v.detach().cpu() for k, v in case.params.items()},
            "args": case.args, "kwargs": case.kwargs, "module": 0}  # fmt: skip
    found = diagnosis.diagnose([call], declared, law_id=name, mismatch=ctx.recorder.mismatch)
    if found is None:
        return []
    if found.declare:
        return _suggestion(raw, found.declare, found.text.split(": declare ")[0])
    return [f"diagnosis: {found.text}"]


def _outputs(name: str, rec: components.Component, actual: Any) -> tuple[Any, ...]:
    if len(rec.outputs) == 1:
        return (actual,)
    if not isinstance(actual, (tuple, list)) or len(actual) != len(rec.outputs):
        raise ValueError(f"{name}: actual is the tuple ({', '.join(rec.outputs)}), None for an output not checked")
    if all(a is None for a in actual):
        raise ValueError(f"{name}: actual holds no output to check")
    return tuple(actual)


def _forward(
    name: str, rec: components.Component, actual: Any, terms: dict[str, Any], *, msg: Msg, check_dtype: bool,
    conventions: Any, offset: float | None, what: str | None,
) -> float:  # fmt: skip
    __tracebackhide__ = True
    raw = _raw_conventions(name, rec, conventions)
    offset = _offset(name, rec, offset, raw)
    declared = _parsed(name, rec, raw, offset)
    outs = _outputs(name, rec, actual)
    stored, options = rec.from_terms(terms)
    case = rec.case(tuple(terms[i] for i in rec.inputs), _with_gains(stored, rec.gains, offset), **options)
    x = case.inputs[0]
    first = next(a for a in outs if a is not None)
    dtype = x.dtype if check_dtype or not isinstance(first, torch.Tensor) else first.dtype
    labels = (what or rec.outputs[0],) if len(rec.outputs) == 1 else rec.outputs
    judged = _Judged(name, rec.name, x, dtype, msg, declared)

    def fits(params: dict[str, Any], arithmetic: Conventions) -> bool:
        c = case.with_params(params)
        with bounds.declared(arithmetic.arithmetic()):
            golds, bnds = rec.golden(c), rec.bounds(c, dtype)
        return all(bool(np.all(golden_agreement(a, g, b, dtype))) for a, g, b in zip(outs, golds, bnds, strict=True)
                   if a is not None)  # fmt: skip

    judged.suggest = lambda ctx: (
        _offset_fits(fits, dict(case.params), rec, raw, offset) or _diagnosed(rec, case, outs, declared, raw, ctx, name)
    )
    with judged:
        context.describe(**_regime(case))
        for label, a in zip(labels, outs, strict=True):
            if a is not None:
                what_out = f"{rec.name} output" + (f" {label}" if len(rec.outputs) > 1 else "")
                assert_output_contract(a, shape=tuple(x.shape), dtype=dtype, device=x.device, what=what_out)
        worst = 0.0
        golds, bnds = rec.golden(case), rec.bounds(case, dtype)
        for label, a, g, b in zip(labels, outs, golds, bnds, strict=True):
            if a is not None:
                worst = max(worst, assert_matches_golden(a, g, _judgeable(b, name, label), what=label))
        return worst


def _regime(case: components.Case) -> dict[str, Any]:
    x = case.inputs[0]
    out: dict[str, Any] = {"shape": list(x.shape), "D": x.shape[-1]}
    if "eps" in case.kwargs:
        out["eps"] = case.kwargs["eps"]
    if case.args and hasattr(case.args[0], "n_heads"):
        out["config"] = f"H={case.args[0].n_heads}, G={case.args[0].n_kv_heads}"
    elif len(case.args) == 2:
        out["F"] = case.args[1]
    return out


# ---------------------------------------------------------------------------------------------- gradients


def _named(grads: Sequence[Any] | Mapping[str, Any], names: Sequence[str], name: str) -> dict[str, Any]:
    """``grads`` (a tuple in the order of ``names`` or a mapping by name) → {name: gradient}, Nones dropped."""
    if isinstance(grads, Mapping):
        unknown = sorted(set(grads) - set(names))
        if unknown:
            raise ValueError(f"{name}: grads names {unknown}; expected some of {', '.join(names)}")
        given = dict(grads)
    else:
        if isinstance(grads, torch.Tensor) or len(grads) > len(names):
            raise ValueError(f"{name}: grads is a tuple of at most {len(names)} gradients ({', '.join(names)})")
        given = dict(zip(names, grads, strict=False))
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        raise ValueError(f"{name}: grads holds no gradient to check")
    return given


def _cotangents(name: str, rec: components.Component, grad_out: Any) -> tuple[Any, ...]:
    if len(rec.outputs) == 1:
        return (grad_out,)
    if not isinstance(grad_out, (tuple, list)) or len(grad_out) != len(rec.outputs):
        raise ValueError(f"{name}: grad_out is one cotangent per output ({', '.join(rec.outputs)}), None if unused")
    return tuple(grad_out)


def _gradients(
    name: str, rec: components.Component, grads: Any, terms: dict[str, Any], grad_out: Any, *, msg: Msg,
    check_dtype: bool, conventions: Any, offset: float | None,
) -> float:  # fmt: skip
    __tracebackhide__ = True
    raw = _raw_conventions(name, rec, conventions)
    offset = _offset(name, rec, offset, raw)
    declared = _parsed(name, rec, raw, offset)
    stored, options = rec.from_terms(terms)
    case = rec.case(tuple(terms[i] for i in rec.inputs), _with_gains(stored, rec.gains, offset), **options)
    short = {k: rec.grad_names.get(k, k) for k in rec.differentiable}  # contract name -> the name users give
    by_user = _named(grads, [short[k] for k in rec.differentiable], name)
    given = {k: by_user[short[k]] for k in rec.differentiable if short[k] in by_user}
    like = {**dict(zip(rec.inputs, case.inputs, strict=True)), **stored}
    x = case.inputs[0]
    dtype = x.dtype if check_dtype else next(iter(given.values())).dtype
    cotangents = _cotangents(name, rec, grad_out)

    def judge_all(params: dict[str, Any], arithmetic: Conventions, *, record: bool) -> float | bool:
        c = case.with_params(params)
        with bounds.declared(arithmetic.arithmetic()):
            expected = rec.vjp(c, cotangents, dtype)
        worst = 0.0
        for key, grad in given.items():
            exact, b = expected[key]
            what = f"d{short[key]}" if rec.golden_vjp_of is not None else f"∂/∂{key}"
            if not record:
                gold = exact if hasattr(exact, "hi") else _Exact(exact)
                if not np.all(golden_agreement(grad, gold, b, dtype)):
                    return False
                continue
            if hasattr(exact, "hi"):
                worst = max(worst, assert_matches_golden(grad, exact, _judgeable(b, name, what), what=what))
            else:
                rows = _rows(key, x)
                worst = max(worst, assert_close(grad, exact, b, what=f"{what} over {rows} rows",
                                                expected_name="fp64 derivative"))  # fmt: skip
        return worst if record else True

    judged = _Judged(name, rec.name, x, dtype, msg, declared)
    judged.suggest = lambda ctx: _offset_fits(
        lambda p, a: bool(judge_all(p, a, record=False)), dict(case.params), rec, raw, offset
    )
    with judged:
        context.describe(**_regime(case))
        for key, grad in given.items():
            want = like[key].dtype if check_dtype else grad.dtype
            shape = tuple(like[key].shape)
            assert_output_contract(grad, shape=shape, dtype=want, device=like[key].device, what=f"d{short[key]}")
        with bounds.declared(declared.arithmetic()):
            return float(judge_all(dict(case.params), declared, record=True))


class _Exact:
    """A float64 array as a golden value (hi + 0): the Block's fp64 derivative, for ``golden_agreement``."""

    def __init__(self, value: Any) -> None:
        self.hi = np.asarray(value, dtype=np.float64)
        self.lo = np.zeros_like(self.hi)


def _rows(key: str, x: torch.Tensor) -> int:
    return x.shape[-2] if key == "x" else x.numel() // x.shape[-1]


# ---------------------------------------------------------------------------------------------- generation


_COMMON = (
    inspect.Parameter("msg", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("check_dtype", inspect.Parameter.KEYWORD_ONLY, default=True),
    inspect.Parameter("conventions", inspect.Parameter.KEYWORD_ONLY, default=None),
)


def _term_params(rec: components.Component, required: bool) -> list[inspect.Parameter]:
    P = inspect.Parameter
    return [
        P(t, P.POSITIONAL_OR_KEYWORD, default=rec.defaults.get(t, P.empty))
        for t in rec.terms
        if (t not in rec.defaults) == required
    ]


def _extra(rec: components.Component) -> list[inspect.Parameter]:
    P = inspect.Parameter
    return [P("offset", P.KEYWORD_ONLY, default=None)] if rec.gains else []


def _terms_doc(rec: components.Component) -> str:
    gain = (
        f" ``offset``: the kernel stores {' and '.join(rec.gains)} as w and applies the gain offset + w (Liger's "
        "offset=, Gemma's 1 + w): pass the stored tensor."
        if rec.gains
        else ""
    )
    keys = ", ".join(rec.conventions)
    return f"``conventions`` keys: {keys}.{gain}"


def make_close(rec: components.Component) -> Callable[..., float]:
    """The value drop-in of ``rec``: ``assert_<component>_close(actual, *terms, msg=, check_dtype=, conventions=,
    [offset=,] what=)``."""
    P = inspect.Parameter
    name = rec.dropin("close")
    what_param = [P("what", P.KEYWORD_ONLY, default=rec.outputs[0])] if len(rec.outputs) == 1 else []
    sig = inspect.Signature([P("actual", P.POSITIONAL_OR_KEYWORD), *_term_params(rec, True),
                             *_term_params(rec, False), *_COMMON, *_extra(rec), *what_param],
                            return_annotation=float)  # fmt: skip

    def assertion(*args: Any, **kwargs: Any) -> float:
        __tracebackhide__ = True
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        terms = {t: a[t] for t in rec.terms}
        return _forward(name, rec, a["actual"], terms, msg=a["msg"], check_dtype=a["check_dtype"],
                        conventions=a["conventions"], offset=a.get("offset"), what=a.get("what"))  # fmt: skip

    many = f"the tuple ({', '.join(rec.outputs)}), None for an output not checked"
    out = many if len(rec.outputs) > 1 else f"the output {rec.outputs[0]}"
    assertion.__doc__ = (
        f"{rec.name}: {rec.summary}. ``actual`` ({out}) within the derived bound of the golden value of "
        f"{rec.signature} at the given {', '.join(rec.terms)}. {_terms_doc(rec)}"
    )
    return _named_function(assertion, name, sig)


def make_grads_close(rec: components.Component) -> Callable[..., float]:
    """The gradient drop-in of ``rec``: ``assert_<component>_grads_close(grads, *required terms, grad_out,
    *defaulted terms, msg=, check_dtype=, conventions=, [offset=])``."""
    P = inspect.Parameter
    name = rec.dropin("grads_close")
    sig = inspect.Signature([P("grads", P.POSITIONAL_OR_KEYWORD), *_term_params(rec, True),
                             P("grad_out", P.POSITIONAL_OR_KEYWORD), *_term_params(rec, False), *_COMMON,
                             *_extra(rec)], return_annotation=float)  # fmt: skip

    def assertion(*args: Any, **kwargs: Any) -> float:
        __tracebackhide__ = True
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        terms = {t: a[t] for t in rec.terms}
        return _gradients(name, rec, a["grads"], terms, a["grad_out"], msg=a["msg"], check_dtype=a["check_dtype"],
                          conventions=a["conventions"], offset=a.get("offset"))  # fmt: skip

    names = ", ".join(f'"{rec.grad_names.get(k, k)}"' for k in rec.differentiable)
    oracle = "the golden VJP" if rec.golden_vjp_of is not None else "the fp64 derivative of the reference"
    assertion.__doc__ = (
        f"``grads`` of {rec.signature} for the cotangent ``grad_out`` (one per output: "
        f"{', '.join(rec.outputs)}) within the derived bounds of {oracle}; a tuple in the order {names} or a "
        f"mapping by those names. {_terms_doc(rec)}"
    )
    return _named_function(assertion, name, sig)


def _named_function(fn: Callable[..., float], name: str, sig: inspect.Signature) -> Callable[..., float]:
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__signature__ = sig  # type: ignore[attr-defined]
    return fn


def dropins(rec: components.Component) -> dict[str, Callable[..., float]]:
    """The drop-ins of ``rec`` by name (a component registered later gets its own this way)."""
    if "drop-in" in rec.not_applicable or rec.from_terms is None:
        return {}
    made = {rec.dropin("close"): make_close(rec)}
    if rec.vjp_of is not None:
        made[rec.dropin("grads_close")] = make_grads_close(rec)
    return made


for _rec in components.RECORDS.values():
    for _name, _fn in dropins(_rec).items():
        globals()[_name] = _fn
        __all__.append(_name)
del _rec, _name, _fn
