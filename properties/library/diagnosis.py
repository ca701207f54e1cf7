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
    stale state           (bug) the weights / config of an earlier call of the example; γ = 1 (the initial weight)
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
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

import golden
from golden.formats import NAMES, fmt
from properties.adapters.kit import permute_rope
from properties.library import components
from properties.library.assertions import as_f64, golden_agreement
from properties.library.conventions import Conventions, written
from properties.library.harness import GRADCHECK_ATOL, GRADCHECK_STEP
from properties.numerics import bounds

__all__ = ["HYPOTHESES", "NO_MATCH", "Finding", "diagnose", "input_row"]

NO_MATCH = "no known convention matches"
_WORK = 1 << 22  # multiply-adds one golden evaluation of a reduced call may cost (milliseconds in the exact engine)
_ROWS = 16  # rows (RMSNorm, SwiGLU) a reduced call keeps at most, the worst one first; tokens of a Block prefix
_TOKENS = 64  # the longest Block prefix evaluated (a failure further on is judged on the first 64 tokens)
_OPTS = {"timeout": 20}  # golden options: never the 120 s default inside a diagnosis


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
    """One recorded call of the subject, reduced to the rows (tokens) a diagnosis evaluates."""

    component: str
    order: int  # its place among the example's recorded calls
    x: torch.Tensor
    y: np.ndarray
    full_shape: tuple[int, ...]  # x's shape before the reduction
    state: dict[str, torch.Tensor]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    module: int | None
    layout: dict[str, Any] | None
    select: Callable[[torch.Tensor], torch.Tensor]  # the reduction, applied to tensors of x's full shape

    @property
    def t(self) -> torch.dtype:
        return self.x.dtype

    @property
    def eps(self) -> float:
        return float(self.kwargs.get("eps", self.args[1] if len(self.args) > 1 else 1e-6))

    @property
    def config(self) -> Any:
        return self.args[0] if self.args else None


# ---------------------------------------------------------------------------------------------- golden and bound


def _evaluate(v: _View, x: torch.Tensor | None = None, state: Mapping[str, torch.Tensor] | None = None,
              eps: float | None = None, config: Any = None) -> tuple[Any, bounds.Bound]:  # fmt: skip
    """(golden, bound) of the component at these inputs (default: the call's), the bound under the declaration
    in force (``bounds.declared``)."""
    x = v.x if x is None else x
    s = v.state if state is None else state
    t = v.t
    if v.component == "RMSNorm":
        e = v.eps if eps is None else eps
        w = s["weight"]
        return golden.rmsnorm(x, w, e, **_OPTS), bounds.rmsnorm(x, w, e, t)
    if v.component == "SwiGLU":
        ws = [s[f"{n}.weight"] for n in ("w_gate", "w_up", "w_down")]
        return golden.swiglu(x, *ws, **_OPTS), bounds.swiglu(x, *ws, t)
    cfg = v.config if config is None else config
    params = {k: s[k] for k in golden.BLOCK_PARAMS}
    return golden.block(x, params, cfg, **_OPTS), bounds.block(x, params, cfg, t)


def _holds(v: _View, gold: Any, bound: bounds.Bound, *, flushed_out: bool = False) -> bool:
    """Every element of the call's output within ``bound`` of ``gold`` (``flushed_out``: a zero output may also
    stand for a result below t's smallest normal)."""
    ok = golden_agreement(v.y, gold, bound, v.t)
    if flushed_out:
        hi, lo = (np.asarray(p, dtype=np.float64) for p in (gold.hi, gold.lo))
        allowed = np.broadcast_to(np.asarray(bound.abs, dtype=np.float64), hi.shape)
        with np.errstate(invalid="ignore"):
            ok = ok | ((v.y == 0) & (np.abs(hi + lo) < fmt(v.t).smallest_normal + allowed))
    return bool(np.all(ok))


def _explains(v: _View, **changed: Any) -> bool:
    """The call's output is within the bound of the golden value of the changed inputs / eps / config."""
    flushed_out = changed.pop("flushed_out", False)
    gold, bound = _evaluate(v, **changed)
    return _holds(v, gold, bound, flushed_out=flushed_out)


# ---------------------------------------------------------------------------------------------- hypotheses


@dataclasses.dataclass(frozen=True)
class _Seen:
    """What every hypothesis may use: the declaration, the call's contract golden value, every call of the
    example (in the order they were made)."""

    conventions: Conventions
    gold: Any
    bound: bounds.Bound
    calls: tuple[_View, ...]


def _declare(key: str, value: Any) -> str:
    return f"declare {written(key, value)} if that is intended"


def _convention(what: str, key: str, value: Any) -> Finding:
    return Finding(f"consistent with {what}: {_declare(key, value)}", "convention", {key: value})


def _bug(what: str) -> Finding:
    return Finding(f"looks like {what}", "bug")


def _flush(t: torch.Tensor) -> torch.Tensor:
    """t with its subnormal values (of its own dtype) set to zero."""
    return torch.where(t.abs() < torch.finfo(t.dtype).tiny, torch.zeros_like(t), t)


def _rope_layout(v: _View, seen: _Seen) -> Finding | None:
    """The Block's RoPE rotates other pairs than the W_q, W_k rows it is given assume (or rotates the other way)."""
    if v.component != "Block":
        return None
    cfg, declared = v.config, seen.conventions.rope_layout or "rotate-half"
    heads = {"attn.wq.weight": cfg.n_heads, "attn.wk.weight": cfg.n_kv_heads}
    # a Block of the other layout, handed rows of the declared one, computes the contract's function of the rows
    # permuted once more towards the declared layout (kit.permute_rope; harness.RopeLayout does it once)
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
    """The result is the golden value for the weights (and eps, config) an earlier call of the example had."""
    for earlier in seen.calls:
        if earlier.order >= v.order or earlier.component != v.component:
            continue
        if not all(k in earlier.state and earlier.state[k].shape == w.shape for k, w in v.state.items()):
            continue
        if _same(earlier.state, v.state) and earlier.args == v.args and earlier.kwargs == v.kwargs:
            continue
        changed: dict[str, Any] = {"state": {k: earlier.state[k].to(w.dtype) for k, w in v.state.items()}}
        if v.component == "RMSNorm":
            changed["eps"] = earlier.eps
        if v.component == "Block":
            changed["config"] = earlier.config
        if _explains(v, **changed):
            whose = "the same module's" if earlier.module == v.module else "another instance's"
            return _bug(
                f"stale state: the result is right for {whose} weights and settings at call {earlier.order + 1} "
                "of this example (something derived from them cached at a first call, or per class)"
            )
    return None


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
    if v.component != "RMSNorm" or c.weight_offset:
        return None
    t, comp = v.t, fmt(c.compute(v.t)).dtype
    gamma = v.state["weight"]
    wide = gamma.to(torch.float64)
    stored = (wide - 1.0).to(t)  # an adapter's w = γ − 1 (exact in fp64), stored in the module dtype
    for gain in ((1.0 + stored.to(comp)), (1.0 + (gamma.to(comp) - 1.0))):  # 1 + w added in c (operands in c)
        if _explains(v, state={"weight": gain.to(torch.float64)}):
            what = f"a gain formed as 1 + (γ − 1) in {fmt(comp).name} (Gemma's 1 + w)"
            return _convention(what, "weight_offset", 1.0)
    if t != comp and _explains(v, state={"weight": (1.0 + (gamma.to(t) - 1.0)).to(torch.float64)}):
        return _bug(
            f"Gemma's 1 + (γ − 1) formed in {fmt(t).name}, the storage dtype, where 1 + w belongs in the compute "
            "dtype (linkedin/Liger-Kernel#1462)"
        )
    if _explains(v, state={"weight": torch.ones_like(wide)}):
        return _bug("γ = 1: the gain not applied, or the module's initial weight used instead of the loaded one")
    if _explains(v, state={"weight": wide + 1.0}):
        return _bug(
            "Gemma's (1 + w) applied to the contract's gain γ (the contract's weight is the gain itself; a (1 + w) "
            "layer is given w = γ − 1)"
        )
    return None


def _flushed(v: _View, seen: _Seen) -> Finding | None:
    """Subnormal inputs read as zero (DAZ) and/or subnormal results returned as zero (FTZ)."""
    t, declared = v.t, seen.conventions.flushes(v.t)
    tiny, name = torch.finfo(t).tiny, fmt(t).name
    given = (v.x, *(w for w in v.state.values() if w.dtype == t))
    subnormal_in = any(bool(((a != 0) & (a.abs() < tiny)).any()) for a in given)
    read_as_zero = {"x": _flush(v.x), "state": {k: _flush(w) if w.dtype == t else w for k, w in v.state.items()}}
    tried: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    if subnormal_in and "input" not in declared:
        tried.append((("input",), read_as_zero))
    tiny_out = bool(np.any(np.abs(_exact(seen.gold)) < fmt(t).smallest_normal))
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


def _eps_dtype(v: _View, seen: _Seen) -> Finding | None:
    """eps stored in a narrower dtype before it is added (a kernel's fp32 scalar, ONNX's float attribute)."""
    if v.component != "RMSNorm" or seen.conventions.arithmetic().eps.get(fmt(v.t).name):
        return None
    for d in ("fp32", "bf16", "fp16"):
        eps2 = float(torch.tensor(v.eps, dtype=torch.float64).to(fmt(d).dtype))
        if eps2 != v.eps and _explains(v, eps=eps2):
            return _convention(f"eps stored in {d} (eps′ = {eps2!r} added, not {v.eps!r})", "eps_dtype", d)
    return None


def _eps_constant(v: _View, seen: _Seen) -> Finding | None:
    """The module adds another eps than the one it was constructed with."""
    if v.component != "RMSNorm":
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


def _narrower(v: _View, seen: _Seen) -> Finding | None:
    """fp64 or fp32 input whose arithmetic runs in a narrower dtype c (fp32, fp16, bf16): the narrowest c whose
    precision shows in the outputs, else the widest c whose range does (bf16 and fp32 share one); and the bound
    of c-arithmetic holds — with a finite allowance wherever the contract's bound fails, unless c's range is the
    evidence. (16-bit input computed in its own dtype leaves no such trace: not diagnosed.)"""
    name = fmt(v.t).name
    narrower = [
        f for f in map(fmt, ("bf16", "fp16", "fp32")) if f.p < fmt(v.t).p and f.u > fmt(seen.conventions.compute(v.t)).u
    ]
    tells = [(f, False, lambda f: _values_of(v, seen.gold, f.dtype) or _rounding_of(v, seen.gold, f)) for f in narrower]
    tells += [(f, True, lambda f: _range_of(v, seen.gold, f)) for f in reversed(narrower)]
    a = bounds.declared_arithmetic()
    for f, by_range, tell in tells:
        evidence = tell(f)
        if not evidence:
            continue
        with bounds.declared(dataclasses.replace(a, compute={**a.compute, name: f.name})):
            _, bound = _evaluate(v)
        if _holds(v, seen.gold, bound) and (by_range or _judged_where_failed(v, seen, bound)):
            return _convention(f"{f.name} arithmetic on {name} inputs ({evidence})", "compute_dtype", {name: f.name})
    return None


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
    if v.component != "RMSNorm" or (fmt(v.t).name, f.name) != ("fp64", "fp32"):
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
    if v.component == "Block":
        return ""
    x = as_f64(v.x).reshape(-1, v.x.shape[-1])
    y, g = v.y.reshape(x.shape), _exact(gold).reshape(x.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        if v.component == "RMSNorm":
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
    _eps_dtype,
    _eps_constant,
    _narrower,
)


# ---------------------------------------------------------------------------------------------- the calls


def _views(calls: Sequence[Mapping[str, Any]], mismatch: Mapping[str, Any] | None) -> list[_View]:
    """Each usable recorded call as a reduced view: the one whose output failed the comparison first, then the
    latest first."""
    usable = [(n, c) for n, c in enumerate(calls) if c.get("component") in _diagnosed() and "y" in c and "args" in c]
    usable.sort(key=lambda nc: (not _is_mismatch(nc[1], mismatch), -nc[0]))
    views = (_reduce(n, c, mismatch if _is_mismatch(c, mismatch) else None) for n, c in usable)
    return [v for v in views if v is not None]


def _is_mismatch(call: Mapping[str, Any], mismatch: Mapping[str, Any] | None) -> bool:
    if mismatch is None or "y" not in call:
        return False
    actual, y = np.asarray(mismatch["actual"]), call["y"]
    return actual.shape == tuple(y.shape) and bool(np.array_equal(actual, as_f64(y), equal_nan=True))


def _reduce(order: int, call: Mapping[str, Any], mismatch: Mapping[str, Any] | None) -> _View | None:
    """The call on at most ``_ROWS`` rows (the worst one first) or, for a Block, a causal prefix of at most
    ``_TOKENS`` tokens of the worst batch entry (its output depends on no later token); None when one golden
    evaluation of that costs more than about ``_WORK`` multiply-adds."""
    component, x, y = call["component"], call["x"], call["y"]
    if x.shape != y.shape or x.ndim < 1 or x.dtype not in _DTYPES:
        return None
    state = {k: w for k, w in call["state"].items() if torch.is_tensor(w)}
    index = tuple(mismatch["index"]) if mismatch is not None else None
    D = x.shape[-1]
    if component == "Block":
        if x.ndim != 3 or not all(k in state for k in golden.BLOCK_PARAMS):
            return None
        b, pos = (index[0], index[1]) if index else (0, 0)
        T = min(x.shape[1], _TOKENS if pos >= _TOKENS else max(pos + 1, _ROWS))
        F = state["ffn.w_gate.weight"].shape[0]
        if T * (T + 3 * F + 4 * D) * D > _WORK:
            return None

        def select(t: torch.Tensor) -> torch.Tensor:
            return t[b : b + 1, :T]

    else:
        if component == "SwiGLU" and not all(f"{n}.weight" in state for n in ("w_gate", "w_up", "w_down")):
            return None
        if component == "RMSNorm" and "weight" not in state:
            return None
        per_row = D * (3 * state["w_gate.weight"].shape[0] if component == "SwiGLU" else 1)
        if per_row > _WORK:
            return None
        rows = math.prod(x.shape[:-1])
        worst = int(np.ravel_multi_index(index[:-1], x.shape[:-1])) if index and x.ndim > 1 else 0
        keep = max(1, min(_ROWS, _WORK // per_row))
        chosen = [worst, *[r for r in range(rows) if r != worst][: keep - 1]]

        def select(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(-1, D)[chosen]

    return _View(
        component, order, select(x), as_f64(select(y)), tuple(x.shape), state, tuple(call["args"]),
        dict(call.get("kwargs", {})), call.get("module"), call.get("layout"), select,
    )  # fmt: skip


_DTYPES = tuple(fmt(n).dtype for n in NAMES)


# ---------------------------------------------------------------------------------------------- the diagnosis


def diagnose(
    calls: Sequence[Mapping[str, Any]] | None,
    conventions: Conventions | None,
    *,
    law_id: str = "",
    mismatch: Mapping[str, Any] | None = None,
) -> Finding | None:
    """What the failing example's recorded ``calls`` look like (see the module docstring), under the component's
    ``conventions``; ``mismatch``: the failed comparison (``context.record_mismatch``). None: nothing to judge."""
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
        views = _views(calls, mismatch)
        for view in views:
            gold, bound = _evaluate(view)
            if _holds(view, gold, bound):
                continue  # an accurate call: the law's failure is elsewhere
            seen = _Seen(c, gold, bound, tuple(views))
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


def _for_law(found: Finding, law_id: str) -> Finding:
    if law_id.endswith("gradcheck") and found.declare and "compute_dtype" in found.declare:
        return found._replace(
            text=found.text + " (finite differences of this forward measure its rounding, not its gradient; "
            "declared, the gradcheck is reported as an expected failure)"
        )
    return found


def _forward_noise(v: _View, seen: _Seen, law_id: str) -> str:
    """A gradcheck whose forward is off its golden value by more than finite differences tolerate: say so (the
    gradients may be right; the check measures the forward's error divided by the step)."""
    if not law_id.endswith("gradcheck"):
        return ""
    with np.errstate(invalid="ignore"):
        err = float(np.nanmax(np.abs(v.y - _exact(seen.gold)), initial=0.0))
    if not err / GRADCHECK_STEP > GRADCHECK_ATOL:
        return ""
    return (f"; the forward alone is off its golden value by up to {err:.2g}, which finite differences with step "
            f"{GRADCHECK_STEP:g} turn into gradient errors up to {err / GRADCHECK_STEP:.2g} (gradcheck's atol "
            f"{GRADCHECK_ATOL:g}): its precision, not its backward, fails the check")  # fmt: skip


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
    if call["component"] == "RMSNorm" and row.size:
        ms, eps = float(np.mean(row * row)), float(call.get("kwargs", {}).get("eps", 1e-6))
        if ms < eps:
            regimes.append(f"eps-dominated: mean(x²) {ms:.3g} < eps {eps:.3g}")
    big = float(np.max(np.abs(row[np.isfinite(row)]), initial=0.0))
    if big * big > f.max:
        regimes.append(f"x² overflows {f.name}: max |x| {big:.4g}")
    if not regimes:
        return None
    shown = ", ".join(f"{v:.4g}" for v in row[:8]) + (f", … ({row.size} values)" if row.size > 8 else "")
    return f"input row {index[:-1]} ({'; '.join(regimes)}): x = [{shown}]"
