"""The golden engine's framework: options, deadlines, reading the exact inputs, evaluation and self-validation.

Like scipy/xsref ``_framework.py``: everything here is plumbing around the mathematical definitions
(:mod:`golden.definitions`) and the exact double-double fast paths (:mod:`golden.fast`); nothing here knows a
formula. :func:`evaluate` runs one component:

1. the fast path first, when the options allow it and the inputs lie in its validity range;
   every sum it makes is certified by an a posteriori bound (:class:`Stats`), and its exp/√ kernels are
   recomputed with mpmath on a sample of their arguments on every call (:func:`check_kernel`);
2. otherwise the definitions in plain mpmath, at ``prec`` and again at ``prec + 64`` bits, in a private
   context (the global ``mpmath.mp`` is never touched); a disagreement raises :class:`GoldenPrecisionError`;
3. with ``validate="full"``, the fast result is recomputed from the definitions at ``prec + 64`` bits and must
   agree to ``2^-tol_bits·max(|golden|, scale)`` (:func:`compare`; scale = Σ|terms| of the definition's last sum).

Every evaluation has a deadline (``timeout`` seconds, :class:`Deadline`), checked by the chunks of the fast
path and by every ``fdot``/``fsum``/``exp`` and conversion of the mpmath evaluation; exceeding it raises
:class:`GoldenTimeoutError`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import mpmath
import numpy as np
import torch

from golden.dd import DD
from golden.rounding import round_dd

DEFAULT_PREC = 128  # bits of the mpmath evaluator (the recomputation uses prec + 64)
DEFAULT_TOL_BITS = 100  # target: |golden − exact| ≤ 2^-100 · max(|exact|, scale)
DEFAULT_TIMEOUT = 120.0  # seconds per golden evaluation


class GoldenError(RuntimeError):
    """The golden value could not be certified."""


class GoldenPrecisionError(GoldenError):
    """Recomputation with more bits disagreed beyond the target accuracy."""


class GoldenTimeoutError(GoldenError):
    """The evaluation exceeded its time budget."""


@dataclasses.dataclass(frozen=True)
class Golden:
    """A golden value: hi + lo (float64 arrays of the output shape) approximates the exact result to ≥ 100 bits.

    ``rounded(dtype)`` is the exact result correctly rounded (RNE, subnormals, overflow to ±inf) to dtype,
    as a CPU tensor; ``info`` records how it was obtained (method, precision, validation).
    """

    hi: np.ndarray
    lo: np.ndarray
    name: str = ""
    info: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.hi.shape)

    def rounded(self, dtype: torch.dtype) -> torch.Tensor:
        """RNE(hi + lo) in ``dtype`` (fp64/fp32/fp16/bf16) as a CPU torch tensor."""
        return round_dd(self.hi, self.lo, dtype)

    def float64(self) -> np.ndarray:
        """hi + lo rounded to float64 (= ``rounded(torch.float64)`` as numpy)."""
        return self.hi + self.lo

    def mpf(self, index: tuple[int, ...], ctx: Any = None) -> Any:
        """One element as an mpmath number (exact hi + lo) in ``ctx`` (a private 160-bit context by default)."""
        ctx = ctx or context(160)
        return ctx.mpf(float(self.hi[index])) + ctx.mpf(float(self.lo[index]))

    def __repr__(self) -> str:
        return f"Golden({self.name}, shape={self.shape}, method={self.info.get('method')})"


# ---------------------------------------------------------------------------------------------- options
@dataclasses.dataclass(frozen=True)
class Opts:
    """The keyword options of every golden function (validated on construction)."""

    method: str = "auto"
    validate: str = "sample"
    prec: int = DEFAULT_PREC
    tol_bits: int = DEFAULT_TOL_BITS
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if self.method not in ("auto", "fast", "mpmath"):
            raise ValueError(f"method must be 'auto', 'fast' or 'mpmath', got {self.method!r}")
        if self.validate not in ("none", "sample", "full"):
            raise ValueError(f"validate must be 'none', 'sample' or 'full', got {self.validate!r}")
        if self.prec < 100:
            raise ValueError(f"prec must be ≥ 100 bits, got {self.prec}")
        if not 53 <= self.tol_bits <= self.prec - 8:
            raise ValueError(f"tol_bits must lie in [53, prec − 8], got {self.tol_bits} (prec={self.prec})")


class Deadline:
    """``check()`` raises GoldenTimeoutError once ``timeout`` seconds have passed since construction."""

    def __init__(self, name: str, timeout: float) -> None:
        self.name, self.timeout, self.end = name, timeout, time.monotonic() + timeout

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise GoldenTimeoutError(
                f"golden.{self.name}: evaluation exceeded its time budget of {self.timeout:g} s; pass a larger "
                f"timeout=..., a smaller shape, or method='fast' (the mpmath evaluator costs ~2 µs per multiply-add)"
            )


class _TimedContext(mpmath.MPContext):
    """A private mpmath context whose reductions and exp check a deadline (the definitions stay plain maths)."""

    def __init__(self, prec: int, deadline: Deadline) -> None:
        super().__init__()
        self.prec = prec
        self._deadline = deadline

    def fdot(self, *args: Any, **kwargs: Any) -> Any:
        self._deadline.check()
        return super().fdot(*args, **kwargs)

    def fsum(self, *args: Any, **kwargs: Any) -> Any:
        self._deadline.check()
        return super().fsum(*args, **kwargs)

    def exp(self, x: Any, **kwargs: Any) -> Any:
        self._deadline.check()
        return super().exp(x, **kwargs)


def context(prec: int, deadline: Deadline | None = None) -> Any:
    """A private mpmath context at ``prec`` bits (never the global ``mpmath.mp``), timed by ``deadline`` if given."""
    if deadline is not None:
        return _TimedContext(prec, deadline)
    ctx = mpmath.MPContext()
    ctx.prec = prec
    return ctx


# -------------------------------------------------------------------------------------- thread pool
_POOL: ThreadPoolExecutor | None = None


def pool_map(fn: Callable[[int], Any], items: list[int], work: int) -> list[Any]:
    """Map over chunks, on a small thread pool when the work is large (numpy ufuncs and torch release the GIL).

    Meanwhile torch computes single-threaded in every thread that runs a chunk: the chunks are the parallelism,
    and a multi-threaded BLAS beside them spins (20× slower on a busy machine). This thread's count, and the
    count torch gives threads it starts later, are restored afterwards.
    """
    global _POOL
    workers = max(1, min(4, os.cpu_count() or 1))
    before = torch.get_num_threads()
    try:
        if work < (1 << 20) or len(items) < 2 or workers == 1:
            torch.set_num_threads(1)
            return [fn(i) for i in items]
        if _POOL is None:
            _POOL = ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix="golden", initializer=torch.set_num_threads, initargs=(1,)
            )
        return list(_POOL.map(fn, items))
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------------------------------------------------- inputs
_READ_CHUNK = 1 << 20  # values per chunk when converting and checking a large input


class Inputs(list):
    """The exact values of a component's inputs (a list of numpy arrays) and ``finite``: whether every value is."""

    finite: bool = True


def read(named: Mapping[str, Any]) -> Inputs:
    """The exact values of the named inputs as numpy (float32 for ≤ 24-bit formats, float64 otherwise; nothing is
    rounded, the inputs are never written to), with ``finite`` telling whether every value is finite.

    Large inputs are converted and checked chunk by chunk on the pool, each chunk checked while it is in cache: a
    bf16 tensor's 16 bits become the high half of an fp32 (exact), so a large weight is read once.
    """
    arrays = Inputs()
    for what, t in named.items():
        a, bits = _exact(t, what)
        flat_a, flat_b = a.reshape(-1), None if bits is None else bits.reshape(-1)

        def convert_and_check(i: int, flat_a: np.ndarray = flat_a, flat_b: np.ndarray | None = flat_b) -> bool:
            part = flat_a[i : i + _READ_CHUNK]
            if flat_b is not None:
                np.left_shift(flat_b[i : i + _READ_CHUNK], 16, out=part.view(np.uint32), dtype=np.uint32)
            return bool(np.isfinite(part).all())

        n = flat_a.shape[0]
        arrays.finite = all(pool_map(convert_and_check, list(range(0, n, _READ_CHUNK)), n)) and arrays.finite
        arrays.append(a)
    return arrays


def exact(t: Any, what: str) -> np.ndarray:
    """The exact values of one tensor/array as numpy (:func:`read`)."""
    return read({what: t})[0]


def _exact(t: Any, what: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, None) with the exact values of a tensor/array — float32 for fp16/fp32, float64 for fp64 and numpy
    integers — or, for bf16, (an uninitialised float32 array, the bf16 bit patterns) for :func:`read` to widen."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if not t.is_floating_point():
            raise TypeError(f"golden: {what} must be a float tensor, got {t.dtype}")
        if t.dtype == torch.bfloat16:
            bits = t.to("cpu").contiguous().view(torch.int16).numpy().view(np.uint16)
            return np.empty(bits.shape, dtype=np.float32), bits
        if t.dtype in (torch.float16, torch.float32):
            return t.to(device="cpu", dtype=torch.float32).numpy(), None
        if t.dtype == torch.float64:
            return t.to(device="cpu").numpy(), None
        raise TypeError(f"golden: unsupported dtype {t.dtype} for {what}")
    a = np.asarray(t)
    if a.dtype == np.float32:
        return a, None
    if a.dtype.kind in "fiu" and a.dtype.itemsize <= 8:
        return a.astype(np.float64), None
    raise TypeError(f"golden: cannot read {what} of type {type(t).__name__} / dtype {a.dtype}")


def row_indices(rows: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``rows`` checked as indices of the rows of an x of ``shape`` (every dimension but the last flattened
    row-major): a 1-D sequence (list, numpy array or tensor) of integers in [0, number of rows) → int64 array."""
    if len(shape) < 1:
        raise ValueError(f"golden.{name}: rows= needs x with a last dimension, got shape {shape}")
    n = math.prod(shape[:-1])
    idx = rows.detach().cpu().numpy() if isinstance(rows, torch.Tensor) else np.asarray(rows)
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise ValueError(f"golden.{name}: rows must be a 1-D sequence of integer indices, got {idx.dtype} {idx.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"golden.{name}: rows must be in [0, {n}) for x of shape {shape}, got {idx.min()}…{idx.max()}")
    return idx.astype(np.int64)


def select_rows(t: Any, rows: Any, name: str) -> Any:
    """Rows ``rows`` of x (a tensor or array, every dimension but the last flattened row-major) as a (k, D) tensor or
    array, for a golden value of a row-wise component on a sample of a huge batch; the indices are checked first:
    integers in [0, number of rows), a 1-D sequence (a list, numpy array or tensor)."""
    shape = tuple(t.shape)
    idx = row_indices(rows, shape, name)
    n = math.prod(shape[:-1])
    if isinstance(t, torch.Tensor):
        return t.reshape(n, shape[-1])[torch.from_numpy(idx).to(t.device)]
    return np.asarray(t).reshape(n, shape[-1])[idx]


def scalar(v: Any, what: str) -> float:
    if isinstance(v, torch.Tensor):
        v = v.item()
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"golden: {what} must be finite, got {v}")
    return v


def check_last(X: np.ndarray, w: np.ndarray, name: str, what: str) -> None:
    if X.ndim < 1 or w.shape != (X.shape[-1],):
        raise ValueError(f"golden.{name}: {what} shape {w.shape} does not match x's last dimension {X.shape}")


def check_same_shape(G: np.ndarray, X: np.ndarray, name: str) -> None:
    if G.shape != X.shape:
        raise ValueError(f"golden.{name}: grad_out shape {G.shape} != x shape {X.shape}")


def check_swiglu_shapes(X: np.ndarray, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray) -> None:
    D = X.shape[-1]
    F = Wg.shape[0]
    if Wg.shape != (F, D) or Wu.shape != (F, D) or Wd.shape != (D, F):
        raise ValueError(
            f"golden.swiglu: expected w_gate, w_up (F, D) and w_down (D, F) for D={D}; got "
            f"{Wg.shape}, {Wu.shape}, {Wd.shape}"
        )


def check_attention_shapes(X, wq, wk, wv, wo, cfg) -> None:
    if X.ndim != 3:
        raise ValueError(f"golden.attention: x must be (B, T, D), got shape {X.shape}")
    D, H, G = X.shape[-1], cfg.n_heads, cfg.n_kv_heads
    K = D // H
    want = {"wq": (H * K, D), "wk": (G * K, D), "wv": (G * K, D), "wo": (D, H * K)}
    for (n, shape), W in zip(want.items(), (wq, wk, wv, wo), strict=True):
        if W.shape != shape:
            raise ValueError(f"golden.attention: {n} has shape {W.shape}, expected {shape} (D={D}, H={H}, G={G})")


# ----------------------------------------------------------------------------------------- validation
class Stats:
    """What one evaluation certified: the worst bound/|sum| of its sums, the number of kernel checks (``info``)."""

    def __init__(self) -> None:
        self.sum_bound_rel = 0.0
        self.kernel_checks = 0

    def record(self, s: DD, bound: np.ndarray) -> None:
        with np.errstate(all="ignore"):
            rel = np.where(bound == 0, 0.0, bound / np.abs(s.hi))
        finite = rel[np.isfinite(rel)]
        if finite.size:
            self.sum_bound_rel = max(self.sum_bound_rel, float(finite.max()))


def check_kernel(name: str, arg: DD, out: DD, fn_mp: Callable[[Any, Any], Any], opts: Opts, stats: Stats) -> None:
    """Self-validation of a DD kernel: recompute a sample of outputs with mpmath at prec + 64 bits
    (the arguments of largest and smallest value and three pseudo-random ones)."""
    if opts.validate == "none" or arg.hi.size == 0:
        return
    flat_a, flat_o = arg.reshape(-1), out.reshape(-1)
    finite = np.isfinite(flat_o.hi) & np.isfinite(flat_a.hi)
    idx = np.flatnonzero(finite)
    if idx.size == 0:
        return
    pick = {int(idx[np.argmax(flat_a.hi[idx])]), int(idx[np.argmin(flat_a.hi[idx])])}
    rng = np.random.default_rng(idx.size)
    pick.update(int(i) for i in rng.choice(idx, size=min(3, idx.size), replace=False))
    ctx = context(opts.prec + 64)
    for i in sorted(pick):
        a = ctx.mpf(float(flat_a.hi[i])) + ctx.mpf(float(flat_a.lo[i]))
        ref = fn_mp(ctx, a)
        got = ctx.mpf(float(flat_o.hi[i])) + ctx.mpf(float(flat_o.lo[i]))
        if ref == 0 and got == 0:
            continue
        if abs(got) < 2.0**-960:  # DD has no relative accuracy near the float64 underflow threshold
            continue
        rel = abs(got - ref) / abs(ref)
        if rel > ctx.ldexp(1, -opts.tol_bits):
            raise GoldenPrecisionError(
                f"golden: DD kernel {name} disagrees with mpmath at {opts.prec + 64} bits on argument "
                f"{mpmath.nstr(a, 30)}: relative difference {mpmath.nstr(rel, 3)} > 2^-{opts.tol_bits}"
            )
        stats.kernel_checks += 1


def compare(name: str, got: DD, ref: np.ndarray, scale: np.ndarray | None, opts: Opts, what: str) -> float:
    """max |got − ref| / max(|ref|, scale) over the elements; raise GoldenPrecisionError above 2^-tol_bits."""
    ctx = context(opts.prec + 64)
    worst = ctx.mpf(0)
    where = None
    fr, fh, fl = ref.reshape(-1), got.hi.reshape(-1), got.lo.reshape(-1)
    fs = scale.reshape(-1) if scale is not None else None
    for i in range(fr.shape[0]):
        r = fr[i]
        if not ctx.isfinite(r) or not math.isfinite(fh[i]):
            if not (ctx.isnan(r) and math.isnan(fh[i])) and float(r) != fh[i]:
                raise GoldenPrecisionError(f"golden.{name}: {what} gives {fh[i]} where the reference gives {r}")
            continue
        denom = max(abs(r), fs[i] if fs is not None else 0)
        if denom < 2.0**-960:
            continue
        d = abs((ctx.mpf(float(fh[i])) + ctx.mpf(float(fl[i]))) - r) / denom
        if d > worst:
            worst, where = d, i
    if worst > ctx.ldexp(1, -opts.tol_bits):
        raise GoldenPrecisionError(
            f"golden.{name}: {what} disagrees with mpmath at {opts.prec + 64} bits at flat index {where}: "
            f"relative difference {mpmath.nstr(worst, 3)} > 2^-{opts.tol_bits}"
        )
    return float(worst)


# ------------------------------------------------------------------------------------------ evaluation
def to_mpf(ctx: Any, a: np.ndarray, deadline: Deadline) -> np.ndarray:
    """A float array as a numpy object array of ``ctx.mpf`` (exact: every float is an mpf)."""
    mpf = ctx.mpf
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(np.asarray(a, dtype=np.float64).reshape(-1).tolist()):
        if i % 4096 == 0:
            deadline.check()
        flat[i] = mpf(v)
    return out


def mp_to_dd(vals: np.ndarray) -> DD:
    """mpf values → DD: hi the rounded value, lo the rounded remainder."""
    flat = vals.reshape(-1)
    hi = np.empty(flat.shape[0])
    lo = np.empty(flat.shape[0])
    for i, v in enumerate(flat):
        h = float(v)
        hi[i] = h
        lo[i] = float(v - h) if math.isfinite(h) else 0.0
    return DD(hi.reshape(vals.shape), lo.reshape(vals.shape))


Exact = Callable[..., Sequence[tuple[np.ndarray, np.ndarray | None]]]  # (ctx, *mpf inputs) → [(value, scale)]


def _definition(
    exact_fn: Exact, inputs: Sequence[np.ndarray], shapes: Sequence[tuple[int, ...]], prec: int, dl: Deadline
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The definitions evaluated at ``prec`` bits on the exact inputs, reshaped to the output shapes."""
    ctx = context(prec, dl)
    outs = exact_fn(ctx, *(to_mpf(ctx, a, dl) for a in inputs))
    return [
        (np.asarray(v, dtype=object).reshape(s), None if sc is None else np.asarray(sc, dtype=object).reshape(s))
        for (v, sc), s in zip(outs, shapes, strict=True)
    ]


def evaluate(
    name: str,
    names: Sequence[str],
    opts: Opts,
    inputs: Sequence[np.ndarray],
    shapes: Sequence[tuple[int, ...]],
    fast: Callable[[Stats, Deadline], DD | tuple[DD, ...]],
    exact_fn: Exact,
    fast_ok: bool,
) -> list[Golden]:
    """One component, evaluated as the module docstring says: fast path first (if allowed and in range), the
    definitions in mpmath otherwise; validated per ``opts.validate``. One Golden per output (``names``)."""
    dl = Deadline(name, opts.timeout)
    if opts.method == "fast" and not fast_ok:
        raise ValueError(
            f"golden.{name}: inputs outside the fast path's range (non-finite, or float64 with "
            f"|v| ≥ 2^500 or 0 < |v| ≤ 2^-900); use method='mpmath' or 'auto'"
        )
    if opts.method == "mpmath" or not fast_ok:
        low = _definition(exact_fn, inputs, shapes, opts.prec, dl)
        high = _definition(exact_fn, inputs, shapes, opts.prec + 64, dl)
        for n, (lv, _), (hv, hs) in zip(names, low, high, strict=True):
            compare(n, mp_to_dd(lv), hv, hs, opts, f"mpmath at {opts.prec} bits")
        info = {"method": "mpmath", "prec": opts.prec + 64, "validated": f"recomputed at {opts.prec}"}
        return [make_golden(n, mp_to_dd(hv), info) for n, (hv, _) in zip(names, high, strict=True)]
    stats = Stats()
    with np.errstate(all="ignore"):  # 0/0 of a zero row with ε = 0 is the definition's NaN, not a warning
        res = fast(stats, dl)
    results = [res] if isinstance(res, DD) else list(res)
    info: dict[str, Any] = {
        "method": "fast",
        "tol_bits": opts.tol_bits,
        "sum_bound_rel": stats.sum_bound_rel,
        "kernel_checks": stats.kernel_checks,
        "validated": opts.validate,
    }
    if opts.validate == "full":
        refs = _definition(exact_fn, inputs, shapes, opts.prec + 64, dl)
        info["full_check_rel"] = max(
            compare(n, got, rv, rs, opts, "the fast path")
            for n, got, (rv, rs) in zip(names, results, refs, strict=True)
        )
    return [
        make_golden(n, DD(r.hi.reshape(s), r.lo.reshape(s)), info)
        for n, r, s in zip(names, results, shapes, strict=True)
    ]


def make_golden(name: str, res: DD, info: Mapping[str, Any], certified: bool = True) -> Golden:
    info = dict(info, certified=certified)
    shape = np.shape(res.hi)  # (ascontiguousarray would promote a 0-d result to 1-d)
    return Golden(np.ascontiguousarray(res.hi).reshape(shape), np.ascontiguousarray(res.lo).reshape(shape), name, info)


def nonfinite(name: str, value: np.ndarray) -> Golden:
    """A non-finite input: the float64 evaluation of the formula, marked uncertified."""
    with np.errstate(all="ignore"):
        return Golden(
            np.asarray(value, dtype=np.float64),
            np.zeros(np.shape(value)),
            name,
            {"method": "float64", "certified": False},
        )
