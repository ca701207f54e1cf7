"""Diagnosis of a failed law: the known convention — or the known kind of bug — its counterexample looks like.

When a law fails, the runner hands this module the failing example's recorded calls of the subject (input,
weights, constructor arguments, output: ``context.record_call``) and the component's declaration. Each call the
subject got wrong — out of the bound of its own golden value, under the declaration — is re-evaluated under
each *hypothesis*: a departure a real library makes (a documented convention it could declare) or a mistake real
code makes. A hypothesis changes the exact function (the eps added, the gain formed, the inputs read, the RoPE
rows) or the arithmetic the bound models, and *matches* when every element of the call is within the bound of
that hypothesis' golden value while the contract's golden value is not met:

    narrower arithmetic   compute_dtype {t: c}: every output is a value of c (or, for RMSNorm, every element
                          carries c's rounding), and the bound of c-arithmetic holds
    eps in a dtype        eps_dtype d: golden with eps' = fl_d(eps)
    another eps           (bug) golden with eps' = 0, 1e-5 …, finfo(t).eps (``nn.RMSNorm(eps=None)``)
    weight offset         weight_offset 1.0: the gain fl_c(1 + fl(γ − 1)); (bug) formed in t, or 1 + γ
    flushed subnormals    flush_subnormals {t: sites}: subnormal inputs read as 0 and/or outputs returned as 0
    RoPE layout           rope_layout "interleaved": W_q, W_k rows permuted; (bug) rotating the other way
    a wrong read          (bug) a square weight read transposed; x read ignoring a stride or its storage offset
    stale state           (bug) the weights / config of an earlier call of the example (the same module's first),
                          or its own weights with another instance's settings; γ = 1 (the initial weight)
    an output dtype       (bug) an output in a dtype the call cannot return (not the input's, the promoted or
                          autocast's): checked first, no hypothesis of the arithmetic tried; a call under
                          autocast is judged in autocast's dtype, and a value failure there matches nothing
    one output buffer     (bug) a result returned in the memory of an earlier result still held (``aliases``,
                          observed by ``context.record_output`` when the call returned)

A match reads "consistent with … : declare `key: value` if that is intended" (a convention) or "looks like …"
(a bug); when none does: "no known convention matches". Nothing here runs the subject: it works on recorded
copies, computes golden values and bounds only, and only on failures. It says nothing (None) where it cannot
judge: no recorded call, a call too large to re-evaluate cheaply, a failure no call's accuracy explains.

The evidence must be specific, so a genuine bug is not dressed as a convention: a hypothesis that only loosens
the bound (narrower arithmetic) also needs the trace of that arithmetic in the outputs themselves — values of c,
or, for RMSNorm, element-wise rounding at c's precision, which a mis-scaled fp64 row (eps outside the square
root) does not have.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

import golden
from golden.formats import NAMES, fmt
from properties.adapters.kit import permute_rope
from properties.library import components, contexts
from properties.library.assertions import as_f64, golden_agreement
from properties.library.conventions import Conventions, written
from properties.library.harness import GRADCHECK_ATOL, GRADCHECK_STEP
from properties.numerics import bounds

__all__ = ["HYPOTHESES", "NO_MATCH", "Finding", "diagnose", "input_row"]

NO_MATCH = "no known convention matches"
_WORK = 1 << 22  # multiply-adds one golden evaluation of a reduced call may cost (milliseconds in the exact engine)
_ROWS = 16  # rows (RMSNorm, SwiGLU) a reduced call keeps at most, the worst one first; tokens of a Block prefix
_TOKENS = 64  # the longest Block prefix evaluated (a failure further on is judged on the first 64 tokens)
WRONG_FORWARD = 2.0**-6  # a forward error beyond this share of the output's scale is no dtype's rounding


def _diagnosed() -> tuple[str, ...]:
    """The components whose recorded calls are re-evaluated: every record without a written reason not to."""
    return tuple(n for n, r in components.RECORDS.items() if "diagnosis" not in r.not_applicable)


class Finding(NamedTuple):
    """What a failure looks like: ``text`` (one line), ``kind`` ("convention", "bug", "none") and, for a
    convention, the declaration that says so (``{key: value}``)."""

    text: str
    kind: str
    declare: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class _View:
    """One recorded call of the subject, reduced to the rows (tokens) a diagnosis evaluates: its inputs and
    outputs in the record's order (``components``), ``y`` the output a hypothesis' tells look at (``out``: the
    first that fails its golden bound)."""

    component: str
    order: int  # its place among the example's recorded calls
    inputs: tuple[torch.Tensor, ...]
    ys: tuple[np.ndarray, ...]
    full_shape: tuple[int, ...]  # x's shape before the reduction
    state: dict[str, torch.Tensor]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    module: int | None
    layout: dict[str, Any] | None
    select: Callable[[torch.Tensor], torch.Tensor]  # the reduction, applied to tensors of x's full shape
    out: int = 0
    sharp: bool = False  # judged as the law judged: the probabilistic tier too (the law drew these inputs)
    out_dtypes: tuple[torch.dtype, ...] = ()  # the dtype each output came back in
    autocast: torch.dtype | None = None  # the call ran under autocast to this dtype (``contexts.CallContext``)

    @property
    def x(self) -> torch.Tensor:
        return self.inputs[0]

    @property
    def y(self) -> np.ndarray:
        return self.ys[self.out]

    @property
    def t(self) -> torch.dtype:
        """The dtype the call is judged in: the input's, or autocast's (the law judges inputs exact in it so)."""
        return self.autocast or self.x.dtype

    @property
    def record(self) -> components.Component:
        return components.record(self.component)

    @property
    def norm(self) -> bool:
        """A norm (its gain ``weight``, its eps): RMSNorm, AddRMSNorm — whose first output is the normalised row of
        the sum of its inputs (:meth:`normed`)."""
        return "weight" in self.record.gains and "eps" in self.record.defaults

    @property
    def normed(self) -> np.ndarray:
        """The row a norm normalises, exactly: its input, or the sum of its inputs (AddRMSNorm's h)."""
        with np.errstate(invalid="ignore", over="ignore"):  # (inf + −inf: a NaN row, as the norm reads it)
            return sum(as_f64(a) for a in self.inputs)

    @property
    def configured(self) -> bool:
        """Built from a ModelConfig (its first constructor argument; the drop-in's ``config`` term): the Block."""
        return "config" in self.record.terms

    @property
    def eps(self) -> float:
        return float(self.kwargs.get("eps", self.args[1] if len(self.args) > 1 else 1e-6))

    @property
    def config(self) -> Any:
        return self.args[0] if self.args else None


# ---------------------------------------------------------------------------------------------- golden and bound


Outputs = tuple[Any, ...]  # one Golden (or one Bound) per output of the record


def _evaluate(v: _View, x: torch.Tensor | None = None, state: Mapping[str, torch.Tensor] | None = None,
              eps: float | None = None, config: Any = None, inputs: tuple[torch.Tensor, ...] | None = None,
              ) -> tuple[Outputs, Outputs]:  # fmt: skip
    """(golden, bound) of every output of the component's record at these inputs (default: the call's; ``x``
    replaces the first), state, eps and config, the bounds under the declaration in force (``bounds.declared``)."""
    given = v.inputs if inputs is None else inputs
    given = given if x is None else (x, *given[1:])
    kwargs = {**v.kwargs, "eps": v.eps if eps is None else eps} if v.norm else dict(v.kwargs)
    args = (v.config if config is None else config, *v.args[1:]) if v.configured else v.args
    state = dict(v.state if state is None else state)
    case = components.Case(v.component, tuple(args), kwargs, state, tuple(given))
    opts = {"drawn": True, "random_weights": True} if v.sharp else {}
    return tuple(v.record.golden_of(case, case.inputs)), tuple(v.record.bounds_of(case, case.inputs, v.t, **opts))


def _holds(v: _View, golds: Outputs, bounds_: Outputs, *, flushed_out: bool = False) -> bool:
    """Every element of every output of the call within its bound of its golden value (``flushed_out``: a zero
    output may also stand for a result below t's smallest normal)."""
    for y, gold, bound in zip(v.ys, golds, bounds_, strict=True):
        ok = golden_agreement(y, gold, bound, v.t)
        if flushed_out:
            hi, lo = (np.asarray(p, dtype=np.float64) for p in (gold.hi, gold.lo))
            allowed = np.broadcast_to(np.asarray(bound.abs, dtype=np.float64), hi.shape)
            with np.errstate(invalid="ignore"):
                ok = ok | ((y == 0) & (np.abs(hi + lo) < fmt(v.t).smallest_normal + allowed))
        if not bool(np.all(ok)):
            return False
    return True


def _explains(v: _View, **changed: Any) -> bool:
    """The call's outputs are within the bounds of the golden values of the changed inputs / eps / config."""
    flushed_out = changed.pop("flushed_out", False)
    golds, bounds_ = _evaluate(v, **changed)
    return _holds(v, golds, bounds_, flushed_out=flushed_out)


def _row_factor_explains(v: _View, seen: _Seen, factor: np.ndarray) -> bool:
    """A norm's first output is the contract's golden row times ``factor`` (one per row, exact in float64 to
    ~10⁻¹⁵: another statistic than the mean square) within its bound scaled alike; its other outputs as they are."""
    k = np.asarray(factor, dtype=np.float64)[..., None]
    gold, bound = seen.golds[0], seen.bounds[0]
    with np.errstate(all="ignore"):
        scaled = golden.Golden(np.asarray(gold.hi) * k, np.asarray(gold.lo) * k, gold.name)
        b = dataclasses.replace(bound, abs=np.broadcast_to(bound.abs, np.shape(gold.hi)) * np.maximum(k, 1.0),
                                prob=None)  # fmt: skip
    return _holds(v, (scaled, *seen.golds[1:]), (b, *seen.bounds[1:]))


def _statistics(v: _View) -> tuple[np.ndarray, np.ndarray]:
    """(m, q, s²) of each row a norm normalises: its mean square is s²·m and its variance about the mean s²·q,
    s the row's largest |value| (no overflow of x²), in extended precision (long double) and two passes (no
    cancellation of ms − mean²)."""
    h = np.asarray(v.normed, dtype=np.longdouble)
    scale = np.max(np.abs(h), axis=-1, keepdims=True)
    scale = np.where(scale > 0, scale, 1)
    hs = h / scale
    mean = hs.mean(axis=-1, keepdims=True)
    ms, var = (hs * hs).mean(axis=-1), ((hs - mean) ** 2).mean(axis=-1)
    return ms, var, scale[..., 0] ** 2


def _row_factor(v: _View, f: Callable[..., np.ndarray]) -> np.ndarray:
    """f(ms, var, eps) per row (extended precision, as float64): the rows' scale taken out of both moments and eps."""
    ms, var, s2 = _statistics(v)
    with np.errstate(all="ignore"):
        return np.asarray(f(ms, var, np.longdouble(v.eps) / s2), dtype=np.float64)


# ---------------------------------------------------------------------------------------------- hypotheses


@dataclasses.dataclass(frozen=True)
class _Seen:
    """What every hypothesis may use: the declaration, the call's contract golden value, every call of the
    example (in the order they were made)."""

    conventions: Conventions
    golds: Outputs  # the contract's golden value of every output
    bounds: Outputs  # and its bound
    calls: tuple[_View, ...]
    out: int = 0  # the output the tells look at (the first that fails)

    @property
    def gold(self) -> Any:
        return self.golds[self.out]

    @property
    def bound(self) -> bounds.Bound:
        return self.bounds[self.out]


def _declare(key: str, value: Any, **more: Any) -> str:
    keys = " and ".join(written(k, v) for k, v in {key: value, **more}.items())
    return f"declare {keys} if that is intended"


def _convention(what: str, key: str, value: Any, **more: Any) -> Finding:
    """A convention finding; ``more``: further keys the same evidence needs declared (Gemma's gain in fp32)."""
    return Finding(f"consistent with {what}: {_declare(key, value, **more)}", "convention", {key: value, **more})


def _bug(what: str) -> Finding:
    return Finding(f"looks like {what}", "bug")


def _flush(t: torch.Tensor) -> torch.Tensor:
    """t with its subnormal values (of its own dtype) set to zero."""
    return torch.where(t.abs() < torch.finfo(t.dtype).tiny, torch.zeros_like(t), t)


def _rope_layout(v: _View, seen: _Seen) -> Finding | None:
    """The Block's RoPE rotates other pairs than the W_q, W_k rows it is given assume (or rotates the other way)."""
    if "attn.wq.weight" not in v.state or v.config is None:
        return None
    cfg, declared = v.config, seen.conventions.rope_layout or "rotate-half"
    heads = {"attn.wq.weight": cfg.n_heads, "attn.wk.weight": cfg.n_kv_heads}
    # a Block of the other layout, handed rows of the declared one, computes the contract's function of the rows
    # permuted once more towards the declared layout (kit.permute_rope; rope_layout.RopeLayout does it once)
    back = {k: permute_rope(v.state[k], n, to=declared) for k, n in heads.items()}
    if _explains(v, state={**v.state, **back}):
        if declared == "rotate-half":
            return _convention(
                "RoPE on interleaved pairs (x₂ⱼ, x₂ⱼ₊₁) where the contract rotates halves (xⱼ, xⱼ₊K/2)",
                "rope_layout",
                "interleaved",
            )
        return _bug('RoPE on halves (rotate-half) while `rope_layout: "interleaved"` is declared: drop the declaration')
    flipped = {}
    for k, n in heads.items():  # a rotation by −θ: the second half of each head's rows negated
        w = v.state[k].clone().reshape(n, -1, v.state[k].shape[-1])
        w[:, w.shape[1] // 2 :] *= -1
        flipped[k] = w.reshape(v.state[k].shape)
    if _explains(v, state={**v.state, **flipped}):
        return _bug("RoPE rotating the other way (sin with the wrong sign: rotate_half as cat(x₂, −x₁))")
    return None


def _stale(v: _View, seen: _Seen) -> Finding | None:
    """The result is the golden value for the weights and settings (eps, config) an earlier call of the example had
    — the same module's calls first — or for its own weights with another instance's settings (a value derived
    from the settings cached per class, keyed without them)."""
    earlier_calls = sorted(
        (e for e in seen.calls if e.order < v.order and e.component == v.component),
        key=lambda e: (e.module != v.module, e.order),
    )
    for earlier in earlier_calls:
        if not all(k in earlier.state and earlier.state[k].shape == w.shape for k, w in v.state.items()):
            continue
        settings: dict[str, Any] = {"eps": earlier.eps} if v.norm else {}
        if v.configured:
            settings["config"] = earlier.config
        same_settings = earlier.args == v.args and earlier.kwargs == v.kwargs
        whose = "the same module's" if earlier.module == v.module else "another instance's"
        if not (_same(earlier.state, v.state) and same_settings):
            state = {k: earlier.state[k].to(w.dtype) for k, w in v.state.items()}
            if _explains(v, state=state, **settings):
                return _bug(
                    f"stale state: the result is right for {whose} weights and settings at call "
                    f"{earlier.order + 1} of this example (something derived from them cached at a first call, or "
                    "per class)"
                )
        if not same_settings and earlier.module != v.module and _explains(v, **settings):
            return _bug(
                f"stale state: the result is right for its own weights with another instance's settings (call "
                f"{earlier.order + 1} of this example: {_settings(earlier)}) — something derived from the settings "
                "cached per class, keyed without them"
            )
    return None


def _settings(v: _View) -> str:
    """The settings of a call, shown: "eps=0.01", "rope_theta=10, norm_eps=1e-05"."""
    if v.configured:
        return f"rope_theta={v.config.rope_theta:g}, norm_eps={v.config.norm_eps:g}"
    return f"eps={v.eps:g}" if v.norm else "its constructor arguments"


def _same(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a)


def _strided_read(v: _View, seen: _Seen) -> Finding | None:
    """x, a view, was read as if laid out otherwise: strides ignored, stride(−1) ignored, rows at the wrong pitch,
    or from the storage's start instead of the view's offset."""
    if v.layout is None:
        return None
    storage, stride, offset = v.layout["storage"], tuple(v.layout["stride"]), v.layout["offset"]
    shape = tuple(v.full_shape)
    dense = tuple(math.prod(shape[k + 1 :]) for k in range(len(shape)))
    models = {
        "read as if contiguous (every stride ignored)": (dense, offset),
        "read at unit column stride (stride(−1) ignored)": ((*stride[:-1], 1), offset),
        "read with rows at pitch D·stride(−1) (only stride(−1) honoured)": (
            tuple(d * stride[-1] for d in dense),
            offset,
        ),
        "read from the start of its storage (the storage offset ignored)": (stride, 0),
    }
    for what, (st, off) in models.items():
        if (st, off) == (stride, offset) or min(st) < 0:
            continue
        if off + sum((n - 1) * s for n, s in zip(shape, st, strict=True)) >= storage.numel():
            continue
        if _explains(v, x=v.select(torch.as_strided(storage, shape, st, off))):
            return _bug(f"x {what}: the view has strides {stride} and storage offset {offset}")
    return None


def _transposed(v: _View, seen: _Seen) -> Finding | None:
    """A square weight matrix read transposed (x·W where nn.Linear computes x·Wᵀ)."""
    for name, w in v.state.items():
        if w.ndim == 2 and w.shape[0] == w.shape[1] and _explains(v, state={**v.state, name: w.t().contiguous()}):
            return _bug(f"{name} read transposed (x·W where nn.Linear computes x·Wᵀ)")
    return None


def _weight_offset(v: _View, seen: _Seen) -> Finding | None:
    """Gemma's gain: the library multiplies by 1 + w for its stored w = γ − 1."""
    c = seen.conventions
    if not v.norm or c.weight_offset:
        return None
    t, comp = v.t, fmt(c.compute(v.t)).dtype
    gamma = v.state["weight"]
    wide = gamma.to(torch.float64)
    stored = (wide - 1.0).to(t)  # an adapter's w = γ − 1 (exact in fp64), stored in the module dtype
    for gain in ((1.0 + stored.to(comp)), (1.0 + (gamma.to(comp) - 1.0))):  # 1 + w added in c (operands in c)
        if _explains(v, state={**v.state, "weight": gain.to(torch.float64)}):
            what = f"a gain formed as 1 + (γ − 1) in {fmt(comp).name} (Gemma's 1 + w)"
            return _convention(what, "weight_offset", 1.0)
    if t != comp and _explains(v, state={**v.state, "weight": (1.0 + (gamma.to(t) - 1.0)).to(torch.float64)}):
        return _bug(
            f"Gemma's 1 + (γ − 1) formed in {fmt(t).name}, the storage dtype, where 1 + w belongs in the compute "
            "dtype (linkedin/Liger-Kernel#1462)"
        )
    if _explains(v, state={**v.state, "weight": torch.ones_like(wide)}):
        return _bug("γ = 1: the gain not applied, or the module's initial weight used instead of the loaded one")
    if _explains(v, state={**v.state, "weight": wide + 1.0}):
        return _bug(
            "Gemma's (1 + w) applied to the contract's gain γ (the contract's weight is the gain itself; a (1 + w) "
            "layer is given w = γ − 1)"
        )
    return None


def _flushed(v: _View, seen: _Seen) -> Finding | None:
    """Subnormal inputs read as zero (DAZ) and/or subnormal results returned as zero (FTZ)."""
    t, declared = v.t, seen.conventions.flushes(v.t)
    tiny, name = torch.finfo(t).tiny, fmt(t).name
    given = (*v.inputs, *(w for w in v.state.values() if w.dtype == t))
    subnormal_in = any(bool(((a != 0) & (a.abs() < tiny)).any()) for a in given)
    read_as_zero = {
        "inputs": tuple(_flush(a) for a in v.inputs),
        "state": {k: _flush(w) if w.dtype == t else w for k, w in v.state.items()},
    }
    tried: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    if subnormal_in and "input" not in declared:
        tried.append((("input",), read_as_zero))
    tiny_out = any(bool(np.any(np.abs(_exact(g)) < fmt(t).smallest_normal)) for g in seen.golds)
    if "output" not in declared and tiny_out:
        tried.append((("output",), {"flushed_out": True}))
        if subnormal_in and "input" not in declared:
            tried.append((("input", "output"), {**read_as_zero, "flushed_out": True}))
    for sites, changed in tried:
        if _explains(v, **changed):
            what = {
                ("input",): "subnormal inputs read as 0 (denormals-are-zero)",
                ("output",): "subnormal results returned as 0 (flush-to-zero)",
                ("input", "output"): "subnormal inputs read as 0 and subnormal results returned as 0",
            }[sites]
            return _convention(f"{what} in {name}", "flush_subnormals", {name: list(sites)})
    return None


def _eps_outside(v: _View, seen: _Seen) -> bool:
    """The call is also x/(√mean(x²) + eps)·γ — eps outside the square root, a bug no eps value describes: where
    it explains the call, an eps hypothesis would only be its shadow on these rows (≈ eps = 0 where
    mean(x²) ≫ eps², ≈ a nearby eps on others), so none is named (issue 37: three laws, three stories)."""
    ms, _, s2 = _statistics(v)
    with np.errstate(all="ignore"):  # √(ms + eps)/(√ms + eps), with ms = s²·m
        factor = np.asarray(np.sqrt(ms + v.eps / s2) / (np.sqrt(ms) + v.eps / np.sqrt(s2)), dtype=np.float64)
    return bool(np.all(np.isfinite(factor))) and _row_factor_explains(v, seen, factor)


def _centred(v: _View, seen: _Seen) -> Finding | None:
    """A norm whose statistic is the variance about the row's mean: x/√(var(x) + eps)·γ (keras'
    ``LayerNormalization(rms_scaling=True)`` scales by ``ops.var``; LayerNorm's statistic without its centring
    of x). Each row is the contract's times √((mean(x²) + eps)/(var(x) + eps)); named only where that differs
    from 1 beyond the bound somewhere (rows with a mean)."""
    if not v.norm:
        return None
    factor = _row_factor(v, lambda ms, var, eps: np.sqrt((ms + eps) / (var + eps)))
    if not np.all(np.isfinite(factor)) or not np.any(np.abs(factor - 1) > 2 * fmt(v.t).u):
        return None
    if _row_factor_explains(v, seen, factor):
        return _bug(
            "a centred statistic: each row scaled by 1/√(var(x) + eps), the variance about the row's mean "
            "(LayerNorm's statistic; keras LayerNormalization(rms_scaling=True)), where RMSNorm uses "
            "1/√(mean(x²) + eps)"
        )
    return None


def _layer_norm(v: _View, seen: _Seen) -> Finding | None:
    """A norm that subtracts the row's mean before normalising: (x − mean)/√(var(x) + eps)·γ — LayerNorm without
    its bias (ggml-org/llama.cpp#173, "out of habit"). Judged as RMSNorm of the centred row (centred in extended
    precision), its bound widened by the centring's own rounding, 2·u_c·(|x| + |mean|)·r·|γ|."""
    if not v.norm or "weight" not in v.state:
        return None
    h = np.asarray(v.normed, dtype=np.longdouble)
    mean = h.mean(axis=-1, keepdims=True)
    centred = np.asarray(h - mean, dtype=np.float64)
    if not np.all(np.isfinite(centred)) or not np.any(np.abs(mean) > 2 * fmt(v.t).u * np.abs(h).max()):
        return None
    x = torch.from_numpy(centred)
    w = v.state["weight"]
    gold = golden.rmsnorm(x, w, v.eps)
    bound = bounds.rmsnorm(x, w, v.eps, v.t)
    uc = fmt(seen.conventions.compute(v.t)).u
    with np.errstate(all="ignore"):
        r = 1 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + v.eps)
        extra = 2 * uc * (np.abs(np.asarray(h, np.float64)) + np.abs(np.asarray(mean, np.float64))) * r
        extra = extra * np.abs(as_f64(w))
    widened = dataclasses.replace(bound, abs=bound.abs + extra, prob=None)
    failed = ~golden_agreement(v.ys[0], seen.golds[0], seen.bounds[0], v.t)
    # evidence only where centring predicts a value clearly off 0 (a constant row, a one-element row centre to 0,
    # as a statistic that overflows or garbage that underflows breaks a row to ≈ 0)
    if not np.any(failed & (np.abs(_exact(gold)) > np.broadcast_to(widened.abs, failed.shape))):
        return None
    if _holds(v, (gold, *seen.golds[1:]), (widened, *seen.bounds[1:])):
        return _bug(
            "LayerNorm's centring: the row's mean subtracted before the row is normalised, (x − mean)/√(var(x) + "
            "eps)·γ, which RMSNorm does not do (ggml-org/llama.cpp#173)"
        )
    return None


def _eps_dtype(v: _View, seen: _Seen) -> Finding | None:
    """eps stored in a narrower dtype before it is added (a kernel's fp32 scalar, ONNX's float attribute)."""
    if not v.norm or seen.conventions.arithmetic().eps.get(fmt(v.t).name) or _eps_outside(v, seen):
        return None
    for d in ("fp32", "bf16", "fp16"):
        eps2 = float(torch.tensor(v.eps, dtype=torch.float64).to(fmt(d).dtype))
        if eps2 != v.eps and _explains(v, eps=eps2):
            return _convention(f"eps stored in {d} (eps′ = {eps2!r} added, not {v.eps!r})", "eps_dtype", d)
    return None


def _eps_constant(v: _View, seen: _Seen) -> Finding | None:
    """The module adds another eps than the one it was constructed with."""
    if not v.norm or _eps_outside(v, seen):
        return None
    name = fmt(v.t).name
    none = "nn.RMSNorm(eps=None) uses the machine epsilon, pytorch/pytorch#142848"
    candidates = {0.0: "eps missing, or added where it vanishes"}
    candidates.setdefault(float(torch.finfo(v.t).eps), f"torch.finfo({name}).eps: {none}")
    candidates.setdefault(float(torch.finfo(torch.float32).eps), f"torch.finfo(fp32).eps: {none}, in fp32")
    for default in (1e-5, 1e-6, 1e-8):
        candidates.setdefault(default, "a library's default")
    for eps2, what in candidates.items():
        if eps2 != v.eps and _explains(v, eps=eps2):
            return _bug(f"the result for eps = {eps2!r} ({what}), not for the eps the module was built with, {v.eps!r}")
    return None


def _reproduced_narrower(v: _View, seen: _Seen) -> Finding | None:
    """:func:`_narrower` on its sharpest evidence alone — an order of c arithmetic reproduces the output bit for bit
    (:func:`_reproduced`) — tried before the eps hypotheses: fp32 arithmetic, where eps vanishes against mean(x²)
    in fp32 (1e-6 beside 16), gives the eps = 0 result within fp64's bound, and is what happened."""
    return _narrower(v, seen, only_reproduced=True)


def _narrower(v: _View, seen: _Seen, *, only_reproduced: bool = False) -> Finding | None:
    """fp64 or fp32 input whose arithmetic runs in a narrower dtype c (fp32, fp16, bf16): the narrowest c whose
    precision shows in the outputs, else the widest c whose range does (bf16 and fp32 share one); and the bound
    of c-arithmetic holds — with a finite allowance wherever the contract's bound fails, unless c's range is the
    evidence. (16-bit input computed in its own dtype leaves no such trace: not diagnosed.)"""
    name = fmt(v.t).name
    if v.norm and _eps_outside(v, seen):  # a known bug explains it: c arithmetic that drops eps would be its shadow
        return None
    narrower = [
        f for f in map(fmt, ("bf16", "fp16", "fp32")) if f.p < fmt(v.t).p and f.u > fmt(seen.conventions.compute(v.t)).u
    ]

    def sharp(f: Any) -> str:
        return _values_of(v, seen.gold, f.dtype) or _rounding_of(v, seen.gold, f) or _reproduced(v, f)

    tells = [(f, False, sharp) for f in narrower]
    tells += [(f, True, lambda f: _range_of(v, seen.gold, f)) for f in reversed(narrower)]
    if only_reproduced:  # the widest c that reproduces it: a narrower one reproduces it only where it rounds alike
        tells = [(f, False, lambda f: _reproduced(v, f)) for f in reversed(narrower)]
    elif v.record.causal:  # rows mixed: no output of c, no row factor; the size and spread of its errors are the trace
        tells += [(f, False, None) for f in reversed(narrower)]
    a = bounds.declared_arithmetic()
    for f, by_range, tell in tells:
        evidence = tell(f) if tell is not None else "…"
        if not evidence:
            continue
        with bounds.declared(dataclasses.replace(a, compute={**a.compute, name: f.name})):
            _, bounds_ = _evaluate(v)
        if tell is None:
            evidence = _errors_of(v, seen, f, bounds_[v.out])
            if not evidence:
                continue
        more = {"weight_offset": 1.0} if "Gemma" in evidence and not seen.conventions.weight_offset else {}
        if v.norm and not more and not seen.conventions.weight_offset and not _holds(v, seen.golds, bounds_):
            more = {"weight_offset": 1.0}  # the two commonest departures together (Gemma in an fp64 layer)
        if more:
            with bounds.declared(dataclasses.replace(a, compute={**a.compute, name: f.name}, weight_offset=1.0)):
                _, bounds_ = _evaluate(v)
        if _holds(v, seen.golds, bounds_) and (by_range or _judged_where_failed(v, seen, bounds_[v.out])):
            what = f"{f.name} arithmetic on {name} inputs ({evidence})"
            return _convention(what, "compute_dtype", {name: f.name}, **more)
    return None


def _reproduced(v: _View, f: Any) -> str:
    """A norm whose output is, bit for bit, the one of the known libraries' orders in c (torch's mean of x² in
    c): fused (x·r·γ in c, one rounding), HF Llama's (x·r rounded to t, then ·γ), OLMo2's (γ·(x·r) in c), T5's
    (the statistic in c, x·r and ·γ in t: an output of t with a statistic of c). No per-element structure of a
    bug and no mis-scaled row reproduces an order of c arithmetic in every bit."""
    if not v.norm or v.out != 0 or "weight" not in v.state or (fmt(v.t).name, f.name) != ("fp64", "fp32"):
        return ""  # (narrower arithmetic in an fp32 norm is no library's convention: autocast's fp16 cast is a bug)
    t, c = v.t, f.dtype
    h = v.inputs[0]
    for more in v.inputs[1:]:
        h = h + more  # AddRMSNorm's h, in t
    w = v.state["weight"].to(t)
    with torch.no_grad():
        hc = h.to(c)
        r = torch.rsqrt(hc.pow(2).mean(-1, keepdim=True) + v.eps)
        orders = {
            "fused": (hc * r * w.to(c)).to(t),
            "HF Llama's: x·r rounded, then ·γ": w * (hc * r).to(t),
            "OLMo2's: γ·(x·r) in c, rounded once": (w.to(c) * (hc * r)).to(t),
            f"T5's: the statistic in {f.name}, x·r·γ in {fmt(t).name}": (w * (h * r.to(t))).to(t),
            f"Gemma's: the gain 1 + (γ − 1) formed in {f.name}": (hc * r * (1.0 + (w - 1).to(c))).to(t),
        }
    for what, y in orders.items():
        if y.shape == v.y.shape and np.array_equal(as_f64(y), v.y, equal_nan=True):
            return f"{f.name} arithmetic in {what} order reproduces it bit for bit"
    return ""


def _errors_of(v: _View, seen: _Seen, f: Any, bound: bounds.Bound) -> str:
    """An fp64 Block's output errs by fp32's order of magnitude — between u_32/64 and 16·u_32 of the
    output's scale (fp32 arithmetic's bound, through the whole block, is 10⁴–10⁵ times looser than its errors, so
    it cannot be the evidence: one stage in bf16 errs by 2¹⁵·u_32) — and its relative errors vary element by element
    within a token (a mis-scaled token, one factor for all of it, is not rounding): norms and RoPE in fp32 inside an
    fp64 layer (HF, torchtune). Narrower arithmetic in an fp32 Block is no library's convention: not named."""
    g = _exact(seen.gold)
    with np.errstate(all="ignore"):
        err = np.abs(v.y - g)
        scale = float(np.nanmax(np.abs(g), initial=0.0))
        size = float(np.nanmax(err, initial=0.0)) / scale if scale > 0 else 0.0
        rel = np.where(np.abs(g) > 0, (v.y - g) / g, np.nan).reshape(-1, g.shape[-1])
        worst = int(np.nanargmax(np.nanmax(np.abs(rel), axis=-1))) if np.isfinite(rel).any() else 0
        row = rel[worst][np.isfinite(rel[worst])]
    if (fmt(v.t).name, f.name) != ("fp64", "fp32") or not f.u / 64 <= size <= 16 * f.u:
        return ""
    if row.size < 4 or not np.std(row) > 0.25 * abs(float(np.mean(row))):
        return ""
    return f"errors of {f.name}'s size, up to {size / f.u:.2g}·u_{f.name} of the output's scale, varying by element"


def _judged_where_failed(v: _View, seen: _Seen, bound: bounds.Bound) -> bool:
    """The hypothesis' bound is finite at every element where the contract's bound fails: it explains them, rather
    than leaving them unjudged (an input beyond c's range, an intermediate overflowing c)."""
    failed = ~golden_agreement(v.y, seen.gold, seen.bound, v.t)
    return bool(np.all(np.isfinite(np.broadcast_to(bound.abs, failed.shape)[failed])))


def _values_of(v: _View, gold: Any, c: torch.dtype) -> str:
    """Every finite output is a value of c, while the golden values rounded to t are not all values of c."""
    y = v.y[np.isfinite(v.y)]
    if y.size == 0 or not np.array_equal(_in(y, c), y):
        return ""
    # chance: a value of t is one of c with probability 2^(p_c − p_t) per nonzero element; ask for ≤ 2^-20
    if np.count_nonzero(y) * (fmt(v.t).p - fmt(c).p) < 20:
        return ""
    g = _exact(gold)
    g = _in(g[np.isfinite(g)], v.t)
    if not np.any(_in(g, c) != g):  # one value of t that is not one of c: chance 2^(p_c − p_t) per element
        return ""
    return f"its output is an {fmt(c).name} value" if y.size == 1 else f"all {y.size} outputs are {fmt(c).name} values"


def _rounding_of(v: _View, gold: Any, f: Any) -> str:
    """RMSNorm in fp64 computed in fp32 with some products in fp64 (HF Llama's w · fl(x·r)): within each row,
    y_i / golden_i varies around the row's common factor by u_32/4 … 8·u_32 — every element was rounded at fp32's
    precision (x read into fp32, x·r rounded), which neither fp64 arithmetic (u_64) nor a mis-scaled row (eps
    outside the square root, an fp32 r times an fp64 x: one factor per row) leaves. Per-element *structures*
    (an unnormalised tail) exceed 8·u_32, or fit it only by a coincidence of the draw."""
    if not v.norm or v.out != 0 or (fmt(v.t).name, f.name) != ("fp64", "fp32"):
        return ""
    g = _exact(gold).reshape(-1, v.x.shape[-1])
    y = v.y.reshape(g.shape)
    spread, rows = 0.0, 0
    with np.errstate(all="ignore"):
        for gr, yr in zip(g, y, strict=True):
            keep = np.isfinite(gr) & np.isfinite(yr) & (np.abs(gr) >= f.smallest_normal) & (yr != 0)
            if keep.sum() < 4:
                continue
            q = yr[keep] / gr[keep]
            spread, rows = max(spread, float(np.max(np.abs(q / np.median(q) - 1)))), rows + 1
    if not rows or not f.u / 4 <= spread <= 8 * f.u:
        return ""
    return f"every element carries {f.name} rounding: up to {spread:.2g} relative within a row"


def _range_of(v: _View, gold: Any, f: Any) -> str:
    """RMSNorm, SwiGLU: the broken rows — a non-finite output, or zeros where the golden row is not — are exactly
    the rows c's range cannot hold (RMSNorm: where x² or Σx² may overflow c; SwiGLU: where x does), and there
    are some: what reading x into c does (NaN from inf·0, or x·rsqrt(inf) = 0)."""
    if v.record.causal:  # a row's output depends on other rows: no row is broken by its own range alone
        return ""
    x = (v.normed if v.norm else as_f64(v.x)).reshape(-1, v.x.shape[-1])
    y, g = v.y.reshape(x.shape), _exact(gold).reshape(x.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        if v.norm:
            certain = np.any(x * x > f.max, axis=-1)
            possible = np.sum(x * x, axis=-1) > f.max
        else:
            certain = possible = np.any(np.abs(x) > f.max, axis=-1)
        broken = ~np.all(np.isfinite(y), axis=-1) | (np.all(y == 0, axis=-1) & np.any(g != 0, axis=-1))
    if not broken.any() or np.any(broken & ~possible) or np.any(certain & ~broken):
        return ""
    return f"its output breaks down exactly in the {int(broken.sum())} row(s) {f.name}'s range cannot hold"


def _exact(gold: Any) -> np.ndarray:
    return np.asarray(gold.hi, dtype=np.float64) + np.asarray(gold.lo, dtype=np.float64)


def _in(a: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """The float64 values of ``a`` rounded to ``dtype`` (RNE)."""
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)).to(dtype).to(torch.float64).numpy()


# In this order: the exact function changes first (sharp: a wrong function rarely fits within the ordinary bound
# of another), the narrower arithmetic last (it loosens the bound, and needs its trace in the outputs).
HYPOTHESES = (
    _rope_layout,
    _stale,
    _strided_read,
    _transposed,
    _weight_offset,
    _flushed,
    _reproduced_narrower,
    _eps_dtype,
    _eps_constant,
    _centred,
    _layer_norm,
    _narrower,
)


# ---------------------------------------------------------------------------------------------- the calls


def _outputs(call: Mapping[str, Any]) -> tuple[torch.Tensor, ...] | None:
    """The recorded outputs of a call in its record's order (one tensor ``y``, or ``outputs``), None if absent."""
    if "outputs" in call:
        return tuple(call["outputs"])
    return (call["y"],) if "y" in call else None


def _views(calls: Sequence[Mapping[str, Any]], mismatch: Mapping[str, Any] | None) -> list[_View]:
    """Each usable recorded call as a reduced view: the one whose output failed the comparison first, then the
    latest first."""
    usable = [
        (n, c) for n, c in enumerate(calls)
        if c.get("component") in _diagnosed() and _outputs(c) is not None and "args" in c
    ]  # fmt: skip
    usable.sort(key=lambda nc: (not _is_mismatch(nc[1], mismatch), -nc[0]))
    views = (_reduce(n, c, mismatch if _is_mismatch(c, mismatch) else None) for n, c in usable)
    return [v for v in views if v is not None]


def _is_mismatch(call: Mapping[str, Any], mismatch: Mapping[str, Any] | None) -> bool:
    outs = _outputs(call)
    if mismatch is None or outs is None:
        return False
    actual = np.asarray(mismatch["actual"])
    return any(actual.shape == tuple(y.shape) and bool(np.array_equal(actual, as_f64(y), equal_nan=True))
               for y in outs)  # fmt: skip


def _input_keys(call: Mapping[str, Any], rec: components.Component) -> list[str]:
    """The keys of the record's inputs in a recorded call (the harness records x, then input_1 … unnamed)."""
    keys = [name if name in call else f"input_{i}" for i, name in enumerate(rec.inputs)]
    keys[0] = "x"
    return keys


def _reduce(order: int, call: Mapping[str, Any], mismatch: Mapping[str, Any] | None) -> _View | None:
    """The call on at most ``_ROWS`` rows (the worst one first) or, for a causal component (the Block), a prefix
    of at most ``_TOKENS`` tokens of the worst batch entry (its output depends on no later token); None when one golden
    evaluation of that costs more than about ``_WORK`` multiply-adds. Inputs and outputs are those of the
    component's record (``components``), every one of x's shape."""
    component = call["component"]
    rec = components.record(component)
    keys = _input_keys(call, rec)
    if any(k not in call for k in keys):
        return None
    inputs, outs = tuple(call[k] for k in keys), _outputs(call)
    x = inputs[0]
    if len(outs) != len(rec.outputs) or any(a.shape != x.shape for a in (*inputs, *outs)):
        return None
    if x.ndim < 1 or x.dtype not in _DTYPES:
        return None
    state = {k: w for k, w in call["state"].items() if torch.is_tensor(w)}
    if any(name not in state for name in rec.params):
        return None
    index = tuple(mismatch["index"]) if mismatch is not None else None
    D = x.shape[-1]
    weights = sum(w.numel() for w in state.values() if w.ndim == 2)  # multiply-adds per row through the weights
    if rec.causal:  # the tokens up to the failed one are a call of their own: a prefix of one sequence
        if x.ndim != 3:
            return None
        b, pos = (index[0], index[1]) if index else (0, 0)
        T = min(x.shape[1], _TOKENS if pos >= _TOKENS else max(pos + 1, _ROWS))
        if T * (T * D + weights) > _WORK:  # attention T·D per token, and the weights
            return None

        def select(t: torch.Tensor) -> torch.Tensor:
            return t[b : b + 1, :T]

    else:
        per_row = max(D, weights)  # SwiGLU: 3·D·F per row
        if per_row > _WORK:
            return None
        rows = math.prod(x.shape[:-1])
        worst = int(np.ravel_multi_index(index[:-1], x.shape[:-1])) if index and x.ndim > 1 else 0
        keep = max(1, min(_ROWS, _WORK // per_row))
        chosen = [worst, *[r for r in range(rows) if r != worst][: keep - 1]]

        def select(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(-1, D)[chosen]

    setting = contexts.CallContext.of(call.get("context"))
    return _View(
        component, order, tuple(select(a) for a in inputs), tuple(as_f64(select(y)) for y in outs),
        tuple(x.shape), state, tuple(call["args"]), dict(call.get("kwargs", {})), call.get("module"),
        call.get("layout"), select, out_dtypes=tuple(y.dtype for y in outs), autocast=setting.autocast_dtype,
    )  # fmt: skip


_DTYPES = tuple(fmt(n).dtype for n in NAMES)


# ---------------------------------------------------------------------------------------------- the diagnosis


def diagnose(
    calls: Sequence[Mapping[str, Any]] | None,
    conventions: Conventions | None,
    *,
    law_id: str = "",
    mismatch: Mapping[str, Any] | None = None,
    tier: str | None = None,
) -> Finding | None:
    """What the failing example's recorded ``calls`` look like (see the module docstring), under the component's
    ``conventions``; ``mismatch``: the failed comparison (``context.record_mismatch``); ``tier``: the tier the
    failure exceeded — "probabilistic": the calls are judged as the law judged them, on that tier too (the law drew
    them), else a failure only that tier sees would find every call within its bound and get no line. None:
    nothing to judge."""
    if not calls:
        return None
    held = [(n, call["aliases"]) for n, call in enumerate(calls, 1) if "aliases" in call]
    if held:  # observed when the call returned: no re-evaluation needed
        return _bug(
            "one output buffer reused across calls: a result came back in the very memory of an earlier result "
            "that was still held (overwriting it)"
        )
    c = conventions or Conventions(calls[0].get("component", ""))
    with bounds.declared(c.arithmetic()):
        views = [dataclasses.replace(v, sharp=tier == "probabilistic") for v in _views(calls, mismatch)]
        for whole in views:
            if (found := _output_dtype(whole)) is not None:
                return found
            golds, bounds_ = _evaluate(whole)
            failing = [
                k for k, (y, g, b) in enumerate(zip(whole.ys, golds, bounds_, strict=True))
                if not bool(np.all(golden_agreement(y, g, b, whole.t)))
            ]  # fmt: skip
            if not failing:
                continue  # an accurate call: the law's failure is elsewhere
            view = dataclasses.replace(whole, out=failing[0])
            seen = _Seen(c, golds, bounds_, tuple(views), out=failing[0])
            if view.autocast is not None:  # the hypotheses model a call without autocast
                return Finding(NO_MATCH + " (the known conventions model a call without autocast)", "none")
            for hypothesis in HYPOTHESES:
                found = hypothesis(view, seen)
                if found is not None:
                    return _for_law(found, law_id)
            return Finding(NO_MATCH + _forward_noise(view, seen, law_id), "none")
    if views and law_id.endswith("_is_batch_invariant"):
        return Finding(
            "every result is within its golden bound: only the last bits depend on the batch size (a reduction "
            "order or kernel chosen by the number of rows): " + _declare("batch_invariant", False),
            "convention",
            {"batch_invariant": False},
        )
    return None


def _output_dtype(v: _View) -> Finding | None:
    """An output in a dtype the call cannot return: not the input's, not the one its parameters promote it to, not
    autocast's (when it ran under autocast). Its values were rounded to that dtype — no convention of the arithmetic
    explains them, so no hypothesis is tried: a cast on the way is the finding."""
    x = v.x.dtype
    accepted = {x, functools.reduce(torch.promote_types, (w.dtype for w in v.state.values()), x)}
    accepted |= {v.autocast} if v.autocast is not None else set()
    wrong = [(name, d) for name, d in zip(v.record.outputs, v.out_dtypes, strict=False) if d not in accepted]
    if not wrong:
        return None
    name, d = wrong[0]
    given = " or ".join(sorted(fmt(a).name for a in accepted))
    return _bug(
        f"{v.component} output {name} returned in {fmt(d).name}, not {given}: its values rounded to {fmt(d).name} "
        f"on the way (a hard-coded cast, as custom_fwd(cast_inputs=torch.float16) under autocast)"
    )


def _for_law(found: Finding, law_id: str) -> Finding:
    if law_id.endswith("gradcheck") and found.declare and "compute_dtype" in found.declare:
        return found._replace(
            text=found.text + " (finite differences of this forward measure its rounding, not its gradient; "
            "declared, the gradcheck is reported as an expected failure)"
        )
    return found


def _forward_noise(v: _View, seen: _Seen, law_id: str) -> str:
    """A gradcheck whose forward is off its golden value by more than finite differences tolerate: say so (the
    gradients may be right; the check measures the forward's error divided by the step) — as its precision where
    the error is of rounding's size (≤ 2¹⁰ × its bound), as a wrong forward where it is beyond any rounding."""
    if not law_id.endswith("gradcheck"):
        return ""
    with np.errstate(invalid="ignore", divide="ignore"):
        g = _exact(seen.gold)
        diff = np.abs(v.y - g)
        err = float(np.nanmax(diff, initial=0.0))
        scale = float(np.nanmax(np.abs(g), initial=0.0))
        rel = err / scale if scale > 0 else math.inf
    if not err / GRADCHECK_STEP > GRADCHECK_ATOL:
        return ""
    fd = (f"finite differences with step {GRADCHECK_STEP:g} turn it into gradient errors up to "
          f"{err / GRADCHECK_STEP:.2g} (gradcheck's atol {GRADCHECK_ATOL:g})")  # fmt: skip
    if rel > WRONG_FORWARD:
        return (f"; the forward itself is wrong — off its golden value by up to {err:.2g}, {rel:.2g} of the output's "
                f"scale, beyond any dtype's rounding — and {fd}: fix the forward first (its golden law fails too); "
                "the gradcheck cannot judge the backward until then")  # fmt: skip
    return (
        f"; the forward alone is off its golden value by up to {err:.2g} (rounding's size), and {fd}: its "
        "precision, not its backward, fails the check"
    )


def input_row(calls: Sequence[Mapping[str, Any]] | None, mismatch: Mapping[str, Any] | None) -> str | None:
    """The input row of the failed element when it lies in a regime (subnormal values, eps-dominated, x² beyond
    the dtype's range): "input row (2,) (eps-dominated: mean(x²) 3e-09 < eps 1e-06): x = [1.2e-05, …]"."""
    call = next((c for c in calls or () if _is_mismatch(c, mismatch)), None)
    if call is None or call.get("component") not in _diagnosed() or mismatch is None:
        return None
    x, index = call["x"], tuple(mismatch["index"])
    if len(index) != x.ndim or not x.is_floating_point():
        return None
    row = as_f64(x[index[:-1]])
    f = fmt(x.dtype)
    regimes = []
    tiny = (row != 0) & (np.abs(row) < f.smallest_normal)
    if tiny.any():
        regimes.append(f"{int(tiny.sum())} subnormal value{'s' if tiny.sum() > 1 else ''}")
    rec = components.record(call["component"])
    keys = _input_keys(call, rec)
    if "eps" in rec.defaults and "weight" in rec.gains and row.size and all(k in call for k in keys):  # a norm
        normed = sum(as_f64(call[k][index[:-1]]) for k in keys)  # the row it normalises: the sum of its inputs
        ms, eps = float(np.mean(normed * normed)), float(call.get("kwargs", {}).get("eps", 1e-6))
        if ms < eps:
            what = "x²" if len(rec.inputs) == 1 else f"({' + '.join(rec.inputs)})²"
            regimes.append(f"eps-dominated: mean({what}) {ms:.3g} < eps {eps:.3g}")
    big = float(np.max(np.abs(row[np.isfinite(row)]), initial=0.0))
    if big * big > f.max:
        regimes.append(f"x² overflows {f.name}: max |x| {big:.4g}")
    if not regimes:
        return None
    shown = ", ".join(f"{v:.4g}" for v in row[:8]) + (f", … ({row.size} values)" if row.size > 8 else "")
    return f"input row {index[:-1]} ({'; '.join(regimes)}): x = [{shown}]"
