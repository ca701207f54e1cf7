"""Declared conventions: what an implementation says about *how* it computes, as validated data.

A module (an adapter or the user's own) may define ``CONVENTIONS = {component: {key: value}}``. Two kinds of
keys share that dictionary:

* **declarations** — typed, validated here, readable by the laws (``Conventions``):

    compute_dtype     the precision of the arithmetic per input dtype: one dtype name for every input ("fp32"),
                      "input" (the input's own dtype), or a map {"fp64": "fp32", …}; unnamed input dtypes keep
                      the reference's (the component record's ``compute``: the norms fp32 for fp16/bf16, else the
                      input's; SwiGLU, Block: the input's)
    eps_dtype         the dtype eps is stored in before it is added ("fp32", "bf16", … or "compute" / "input")
    eps_placement     "inside" (x / √(ms + eps), the contract) or "outside" (x / (√ms + eps))
    flush_subnormals  where subnormals are flushed to zero: any of "input", "output", "intermediate"
                      (``True``: all three, ``False``: none)
    batch_invariant   ``True``: a row's result never depends on how many rows share the call (the
                      ``*_is_batch_invariant`` laws require it, bitwise); ``False``: it may (they measure and report
                      it); undeclared: required on the CPU where the record says why (``batch_invariant_on_cpu``:
                      RMSNorm), else measured (CPU GEMMs pick their kernel by the row count: ``nn.Linear`` is not
                      batch-invariant, the reference included)
    weight_offset     the library multiplies by (offset + w_stored): 0.0 (none) or 1.0 (Gemma's 1 + w)
    roundings         roundings to the storage dtype in the final product: 1 (fl(x·r·w), torch, Gemma) or 2
                      (fl(fl(x·r)·w), HF Llama)
    reduction         the summation order of the reduction(s): "sequential", "pairwise", "blocked", "split-k",
                      "compensated", "tree" or "any"
    accumulation_dtype the dtype the reduction accumulates in ("fp32", … or "compute")
    rope_layout       "rotate-half" (the contract) or "interleaved" (Block)
    norm_input        AddRMSNorm: what its norm reads — "rounded" (h = x + r rounded to the input dtype, the unfused
                      order: vLLM, Liger) or "sum" (the unrounded sum in the compute dtype: fused fp32 kernels)
    dtypes            the input dtypes the implementation supports (others: skipped as "dtype not supported")
    eps_default       float: the library's own default eps (the suite always passes the contract's eps)

  ``compute_dtype``, ``eps_dtype``, ``accumulation_dtype``, ``flush_subnormals`` and ``batch_invariant`` also take
  one value per input dtype, ``{"bf16": ["input"], "fp16": ["input"]}`` (unnamed dtypes: undeclared), for a
  library that behaves so in some dtypes only (tinygrad's emulated bf16 flushes subnormals, its fp32 does not).

* **descriptions** — free text printed beside the measurements: ``formula``, ``rounding``, ``compute``,
  ``weight_mapping``, ``attention``, ``rope``, ``backward``, ``source``, ``notes``.

Any other key is an error (a misspelt declaration must not be silently ignored): :func:`parse` raises
:class:`ConventionError` naming the component, the key and the known keys; a typed key given free text says which
description key takes it (``compute_dtype: "fp32 for the norm"`` → put the sentence under ``compute``).

**How the laws honour a declaration** (the runner hands the running law's component declaration to its context):

* in the bound — the numeric ones, modelled exactly, so a declared implementation keeps a real verdict at the
  declared precision (:meth:`Conventions.arithmetic` → ``properties.numerics.bounds.Arithmetic``):
  ``compute_dtype`` (where it departs from the reference's), ``accumulation_dtype``, ``eps_dtype``,
  ``weight_offset``, ``flush_subnormals`` ("input", "output"), ``norm_input`` (AddRMSNorm: the error of the sum its
  norm reads — undeclared, the larger of the two orders);
* already inside every bound, the declaration is only reported: ``roundings`` 2 (HF Llama's order),
  ``reduction`` (every bound is any-order sound), ``flush_subnormals`` "intermediate" (tiny_c per operation);
* by the harness: ``rope_layout: "interleaved"`` — the Block is handed W_q, W_k with each head's rows permuted
  to the interleaved layout (``kit.permute_rope``), so it is judged against the contract's rotate-half function;
* where no bound can model it, the failure becomes an *expected, measured* result (:meth:`Conventions.excuse`:
  status "xfailed", the declaration as the reason, the measurement kept): today a fp64 gradcheck of a component
  that declares fp64 computed in a narrower dtype (finite differences need fp64 arithmetic);
* ``dtypes``: the runner skips the other input dtypes ("dtype not supported", the declaration as reason);
* ``batch_invariant``: the batch-invariance laws require bitwise equality or measure it (:meth:`Conventions.
  batch_invariance`);
* not honoured (reported only): ``eps_placement`` "outside" is another function; ``eps_default`` (the suite
  always passes the contract's eps).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Mapping
from typing import Any

from golden.formats import NAMES, fmt
from properties.library import registry
from properties.numerics.bounds import Arithmetic

__all__ = [
    "DESCRIPTIONS",
    "KEYS",
    "NORM_INPUTS",
    "NOT_MODELLED",
    "ConventionError",
    "Conventions",
    "parse",
    "parse_all",
    "typed_key",
    "written",
]

DESCRIPTIONS = ("formula", "rounding", "compute", "weight_mapping", "attention", "rope", "backward", "source", "notes")
REDUCTIONS = ("any", "sequential", "pairwise", "blocked", "split-k", "compensated", "tree")
FLUSH_SITES = ("input", "output", "intermediate")
KEYS = (
    "compute_dtype",
    "eps_dtype",
    "eps_placement",
    "flush_subnormals",
    "weight_offset",
    "roundings",
    "reduction",
    "accumulation_dtype",
    "rope_layout",
    "norm_input",
    "dtypes",
    "eps_default",
    "batch_invariant",
    *DESCRIPTIONS,
)
NORM_INPUTS = ("rounded", "sum")  # AddRMSNorm: the norm reads the rounded h, or the unrounded sum
# The description key that takes the free text a typed key was given (ConventionError says so).
_FREE_TEXT = {"compute_dtype": "compute", "accumulation_dtype": "compute", "roundings": "rounding",
              "rope_layout": "rope", "weight_offset": "weight_mapping", "reduction": "compute"}  # fmt: skip
# Keys whose bound terms the bounds model (Conventions.arithmetic): the ones a run can find it did not need.
NUMERIC = ("compute_dtype", "accumulation_dtype", "eps_dtype", "weight_offset", "flush_subnormals")
_CONTRACT = {"eps_placement": "inside", "weight_offset": 0.0, "roundings": 1, "rope_layout": "rotate-half"}
# Laws whose failure no bound can model under a declaration: (law-name suffix, why). The declaration that causes
# it is found by :meth:`Conventions.excuse`.
NOT_MODELLED = {
    "gradients_pass_gradcheck": "fp64 finite-difference gradcheck needs fp64 arithmetic",
    "second_derivatives_pass_gradgradcheck": "fp64 finite differences of the first derivative need fp64 arithmetic",
    "is_identity_when_branches_are_zeroed": "the exact identity holds where the residual stays in the input dtype; "
    "computed in the narrower dtype it rounds x (and v)",
    "sum_is_rounded_once": "x + r computed in the narrower dtype is rounded twice (to it, then stored)",
}


class ConventionError(ValueError):
    """A CONVENTIONS declaration that cannot be understood (names the component and the key)."""


PerDtype = Mapping[str, Any]  # {input dtype name: value} (a declaration for some input dtypes only)


def _at(value: Any, name: str) -> Any:
    """A declaration's value for input dtype ``name``: its entry when declared per dtype, else the value itself."""
    return value.get(name) if isinstance(value, Mapping) else value


def _dtype(value: Any, where: str, extra: tuple[str, ...] = ()) -> str:
    if isinstance(value, str) and value in extra:
        return value
    try:
        return fmt(value).name
    except (ValueError, TypeError, KeyError):
        options = ", ".join((*NAMES, *extra))
        raise ConventionError(f"{where}: {value!r} is not a dtype; expected one of {options}") from None


def _choice(value: Any, where: str, options: tuple[str, ...], aliases: Mapping[str, str] | None = None) -> str:
    text = (aliases or {}).get(value, value)
    if text not in options:
        raise ConventionError(f"{where}: {value!r}; expected one of {', '.join(options)}")
    return text


@dataclasses.dataclass(frozen=True)
class Conventions:
    """One component's declarations (None / empty: not declared — the contract's accepted conventions apply)."""

    component: str = ""
    compute_dtype: Mapping[str, str] = dataclasses.field(default_factory=dict)  # declared input → compute dtype
    eps_dtype: str | PerDtype | None = None  # one name for every input dtype, or {input dtype: name}
    eps_placement: str | None = None
    flush_subnormals: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)  # input dtype → sites
    weight_offset: float | None = None
    roundings: int | None = None
    reduction: str | None = None
    accumulation_dtype: str | PerDtype | None = None
    rope_layout: str | None = None
    norm_input: str | None = None
    dtypes: tuple[str, ...] | None = None
    eps_default: float | None = None
    batch_invariant: Mapping[str, bool] = dataclasses.field(default_factory=dict)  # input dtype → declared
    text: Mapping[str, str] = dataclasses.field(default_factory=dict)  # the descriptions

    def compute(self, dtype: Any) -> str:
        """The dtype the arithmetic runs in for input ``dtype`` (declared, else the contract's default)."""
        name = fmt(dtype).name
        declared = self.compute_dtype.get(name)
        if declared == "input":
            return name
        return declared or self.reference[name]

    @property
    def reference(self) -> Mapping[str, str]:
        """{input dtype: the dtype the reference computes in}: the component record's (``Component.compute``)."""
        return registry.record(self.component).compute

    def supports(self, dtype: Any) -> bool:
        return self.dtypes is None or fmt(dtype).name in self.dtypes

    def departures(self) -> dict[str, str]:
        """{input dtype: compute dtype} where the declared compute dtype differs from the reference's."""
        return {k: self.compute(k) for k in NAMES if self.compute_dtype and self.compute(k) != self.reference[k]}

    def flushes(self, dtype: Any) -> frozenset[str]:
        """Where subnormals of input dtype ``dtype`` are declared flushed ("input", "output", "intermediate")."""
        return self.flush_subnormals.get(fmt(dtype).name, frozenset())

    def batch_invariance(self, dtype: Any, device: str) -> bool:
        """Whether the batch-invariance law *requires* bitwise equality in ``dtype`` on ``device`` (else it measures
        and reports it): as declared, else on the CPU where the component record says the reference's rows never
        depend on the batch (``Component.batch_invariant_on_cpu``, with its reason: RMSNorm's)."""
        declared = self.batch_invariant.get(fmt(dtype).name)
        if declared is not None:
            return declared
        return bool(registry.record(self.component).batch_invariant_on_cpu) and str(device).split(":")[0] == "cpu"

    def arithmetic(self) -> Arithmetic:
        """The numeric declarations as the bounds honour them (empty when nothing numeric departs from the
        contract's accepted conventions: the bounds are then exactly the undeclared ones)."""
        compute = self.departures()

        def per_dtype(declared: Any) -> dict[str, str]:
            out = {}
            for k in NAMES:
                named = _at(declared, k)
                if named is None or named == "compute":
                    continue
                out[k] = k if named == "input" else named
            return out

        flush = {k: v & {"input", "output"} for k, v in self.flush_subnormals.items() if v & {"input", "output"}}
        return Arithmetic(
            compute=compute,
            accumulation=per_dtype(self.accumulation_dtype),
            eps=per_dtype(self.eps_dtype),
            weight_offset=self.weight_offset or 0.0,
            flush=flush,
            norm_input=self.norm_input,
        )

    def departing(self, dtype: Any) -> tuple[str, ...]:
        """The numeric keys (``NUMERIC``) whose declaration changes the bounds of input dtype ``dtype``."""
        name, a = fmt(dtype).name, self.arithmetic()
        found = {
            "compute_dtype": name in a.compute,
            "accumulation_dtype": a.accumulation.get(name, self.compute(name)) != self.compute(name),
            "eps_dtype": name in a.eps,
            "weight_offset": bool(a.weight_offset),
            "flush_subnormals": bool(a.flushes(name)),
        }
        return tuple(k for k in NUMERIC if found[k])

    def without(self, key: str, dtype: Any) -> Conventions:
        """These declarations with ``key`` withdrawn for input dtype ``dtype`` (for every dtype: ``weight_offset``):
        what the run measures against to find whether the declaration was needed."""
        name = fmt(dtype).name
        if key == "weight_offset":
            return dataclasses.replace(self, weight_offset=None)
        value = getattr(self, key)
        if isinstance(value, Mapping):
            kept = {k: v for k, v in value.items() if k != name}
            if key == "compute_dtype" and name not in value:
                return self
            return dataclasses.replace(self, **{key: kept})
        kept = {k: value for k in NAMES if k != name}  # a value for every dtype: kept for the others
        return dataclasses.replace(self, **{key: kept})

    def excuse(self, law_id: str, dtype: Any) -> str | None:
        """The declaration that explains a failure of ``law_id`` in ``dtype`` which no bound models (reported as
        an expected, measured result), or None: the failure stands."""
        name = fmt(dtype).name
        for suffix, why in NOT_MODELLED.items():
            if law_id.endswith(suffix) and fmt(self.compute(name)).u > fmt(name).u:
                return f"declared compute {name}→{self.compute(name)}: {why}"
        return None

    @property
    def declared(self) -> dict[str, Any]:
        """The declarations that were made (JSON-able), without the descriptions; a per-dtype declaration whose
        value is the same for every dtype is shown as that one value."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("component", "text") or value in (None, {}, frozenset()):
                continue
            if f.name in ("compute_dtype", "flush_subnormals", "batch_invariant"):
                value = _uniform(value)
            out[f.name] = _plain(value)
        return out

    def summary(self) -> str:
        """One line of what departs from the contract's reference: "compute fp64→fp32; roundings 2; weight offset
        1.0" (empty when nothing such is declared)."""
        parts = []
        changed = {k: self.compute(k) for k in self.compute_dtype if self.compute(k) != self.reference[k]}
        if changed:
            parts.append("compute " + ", ".join(f"{k}→{v}" for k, v in changed.items()))
        for key, value in self.declared.items():
            if key in ("compute_dtype", "eps_default") or _CONTRACT.get(key) == value:
                continue
            parts.append(f"{key.replace('_', ' ')} {_shown(value)}")
        return "; ".join(parts)


def written(key: str, value: Any) -> str:
    """A declaration as a module writes it in its CONVENTIONS: `compute_dtype: {"fp64": "fp32"}`, `weight_offset:
    1.0`, `batch_invariant: False` (diagnoses and reports suggest declarations in this form)."""

    def text(v: Any) -> str:
        if isinstance(v, Mapping):
            return "{" + ", ".join(f"{text(k)}: {text(w)}" for k, w in v.items()) + "}"
        if isinstance(v, (list, tuple, frozenset)):
            return "[" + ", ".join(map(text, sorted(v) if isinstance(v, frozenset) else v)) + "]"
        return f'"{v}"' if isinstance(v, str) else repr(v)

    return f"`{key}: {text(value)}`"


def _uniform(value: Mapping[str, Any]) -> Any:
    """{every dtype: v} → v; a partial or mixed per-dtype map stays a map."""
    values = list(value.values())
    if set(value) == set(NAMES) and all(v == values[0] for v in values):
        return values[0]
    return dict(value)


def _plain(value: Any) -> Any:
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _shown(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_shown(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def _per_dtype(value: Any, where: str, one: Any) -> dict[str, Any]:
    """A value for every input dtype, or ``{dtype: value}`` for some: → {dtype name: one(value)}."""
    if isinstance(value, Mapping):
        return {_dtype(k, where): one(v, f"{where}[{k!r}]") for k, v in value.items()}
    parsed = one(value, where)
    return dict.fromkeys(NAMES, parsed)


def _free_text(key: str, value: Any) -> str:
    """The hint of a ConventionError for a typed key given a sentence: where the free text goes."""
    if not isinstance(value, str) or len(value.split()) < 2:
        return ""
    return (
        f" (free text goes under the description key {_FREE_TEXT.get(key, 'notes')!r}, printed beside the measurements)"
    )


def typed_key(description: str) -> str | None:
    """The typed key whose free text goes under the description key ``description`` ("compute" → "compute_dtype"),
    or None (``notes``, ``source`` … describe no typed key)."""
    return next((key for key, text in _FREE_TEXT.items() if text == description), None)


def parse(component: str, raw: Mapping[str, Any] | None) -> Conventions:
    """Validate one component's CONVENTIONS entry → Conventions (ConventionError on a bad key or value)."""
    if raw is None:
        return Conventions(component)
    if not isinstance(raw, Mapping):
        raise ConventionError(f"CONVENTIONS[{component!r}] must be a dict, not {type(raw).__name__}")
    values: dict[str, Any] = {"component": component}
    text: dict[str, str] = {}
    for key, value in raw.items():
        where = f"CONVENTIONS[{component!r}][{key!r}]"
        try:
            if key in DESCRIPTIONS:
                text[key] = str(value)
            elif key in KEYS:
                values[key] = _PARSERS[key](value, where)
            else:
                close = difflib.get_close_matches(str(key), KEYS, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConventionError(f"{where}: unknown key{hint}; known keys: {', '.join(KEYS)}")
        except ConventionError as exc:
            raise ConventionError(f"{exc}{_free_text(key, value)}") from None
    return Conventions(**values, text=text)


def parse_all(raw: Any, components: tuple[str, ...]) -> dict[str, Conventions]:
    """A module's whole CONVENTIONS ({component: entry}) → {component: Conventions} for ``components``."""
    if raw is None:
        return {c: Conventions(c) for c in components}
    if not isinstance(raw, Mapping):
        raise ConventionError(f"CONVENTIONS must be a dict {{component: {{key: value}}}}, not {type(raw).__name__}")
    unknown = [k for k in raw if k not in components]
    if unknown:
        raise ConventionError(f"CONVENTIONS names {unknown}; components are {', '.join(components)}")
    return {c: parse(c, raw.get(c)) for c in components}


def _compute(value: Any, where: str) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {_dtype(k, where): _dtype(v, f"{where}[{k!r}]", extra=("input",)) for k, v in value.items()}
    target = _dtype(value, where, extra=("input",))
    return dict.fromkeys(NAMES, target)


def _named(value: Any, where: str) -> str | dict[str, str]:
    """eps_dtype / accumulation_dtype: one dtype name ("compute", "input") or {input dtype: name}."""
    one = lambda v, w: _dtype(v, w, extra=("compute", "input"))  # noqa: E731
    return {_dtype(k, where): one(v, f"{where}[{k!r}]") for k, v in value.items()} if isinstance(value, Mapping) \
        else one(value, where)  # fmt: skip


def _sites(value: Any, where: str) -> frozenset[str]:
    if value is True:
        return frozenset(FLUSH_SITES)
    if value is False or value is None:
        return frozenset()
    sites = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple, set, frozenset)) \
        else [value]  # fmt: skip
    bad = [s for s in sites if s not in FLUSH_SITES]
    if bad:
        raise ConventionError(
            f"{where}: {bad}; expected True, False or any of {', '.join(FLUSH_SITES)} "
            f"(or one of these per input dtype: {{'bf16': ['input']}})"
        )
    return frozenset(sites)


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConventionError(f"{where}: {value!r}; expected True or False (or one per input dtype: {{'fp32': False}})")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConventionError(f"{where}: {value!r}; expected a finite number")
    return float(value)


def _roundings(value: Any, where: str) -> int:
    if value not in (1, 2) or isinstance(value, bool):
        raise ConventionError(f"{where}: {value!r}; expected 1 (fl(x·r·w)) or 2 (fl(fl(x·r)·w))")
    return int(value)


def _dtypes(value: Any, where: str) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else list(value)
    return tuple(dict.fromkeys(_dtype(v, where) for v in names))


_PARSERS = {
    "compute_dtype": _compute,
    "eps_dtype": _named,
    "accumulation_dtype": _named,
    "eps_placement": lambda v, w: _choice(
        v, w, ("inside", "outside"), {"inside the square root": "inside", "outside the square root": "outside"}
    ),
    "flush_subnormals": lambda v, w: {k: s for k, s in _per_dtype(v, w, _sites).items() if s},
    "weight_offset": _number,
    "eps_default": _number,
    "roundings": _roundings,
    "reduction": lambda v, w: _choice(v, w, REDUCTIONS),
    "rope_layout": lambda v, w: _choice(v, w, ("rotate-half", "interleaved")),
    "norm_input": lambda v, w: _choice(v, w, NORM_INPUTS),
    "dtypes": _dtypes,
    "batch_invariant": lambda v, w: _per_dtype(v, w, _flag),
}
