"""The golden engine: RMSNorm, LayerNorm, SiLU, SwiGLU, causal GQA attention and the pre-norm Block
evaluated from their *mathematical definitions* on the exact float inputs, to ≥ 100 bits.

Definitions (x: (..., D); every product, sum, division and root is exact, nothing is rounded between steps):

* RMSNorm   y = x / √(Σx²/D + ε) ⊙ w
* LayerNorm y = (x − μ) / √(Σ(x − μ)²/D + ε) ⊙ w + b,  μ = Σx/D
* SiLU      silu(z) = z / (1 + e^(−z))
* SwiGLU    y = W_down (silu(W_gate x) ⊙ W_up x)            (nn.Linear layouts: W_gate, W_up (F, D); W_down (D, F))
* Attention out = W_o concat_h softmax_s≤t(q_h,t · k_g(h),s / √K) v_g(h),s, g(h) = h // (H/G),
            q = RoPE(W_q x), k = RoPE(W_k x), v = W_v x; RoPE rotate-half with angle t·θ^(−2i/K), i = j mod K/2
* Block     h = x + attn(RMSNorm(x; w_attn)),  out = h + SwiGLU(RMSNorm(h; w_ffn))

Two evaluators, one contract (:class:`Golden`: hi + lo in float64 double-double):

``method="fast"`` (what ``"auto"`` picks whenever the inputs lie in its validity range — finite, and for
float64 inputs 2⁻⁹⁰⁰ < |v| < 2⁵⁰⁰): vectorised numpy double-double (see :mod:`golden.dd`). Matrix–vector
products use the Ozaki–Ogita–Oishi error-free splitting: x and the rows of W are cut into slices narrow
enough that float64 GEMM sums every slice product *exactly* in any order (so BLAS does the heavy lifting and
a weight matrix is read once); otherwise products of ≤ fp32 values are exact in float64, float64 (or DD)
factors are split by Veltkamp/Dekker into exact partial products, and every reduction is an error-free
Rump–Ogita–Oishi extraction sum with a rigorous a posteriori bound, iterated until the bound is ≤
2^-tol_bits of the sum. Nonlinearities are DD kernels (exp, √, division).
**Self-validation** of the fast path: (1) every sum is certified by its bound (``info["sum_bound_rel"]``
is the worst bound/|sum| met); (2) the exp and √ kernels are recomputed with
mpmath at ``prec + 64`` bits on a sample of their actual arguments on every call (the extremes and a few
pseudo-random ones); (3) with ``validate="full"`` every output is recomputed by the mpmath evaluator at
``prec + 64`` bits and must agree to ``2^-tol_bits·max(|golden|, scale)``, scale being the magnitude of
the terms of the last sum (condition-aware). The test-suite and ``golden verify`` run (3).

``method="mpmath"``: straightforward mpmath in a private ``MPContext`` (the global ``mp`` is never touched)
at ``prec`` bits and again at ``prec + 64`` bits; a disagreement beyond the target raises
:class:`GoldenPrecisionError`. Slow (≈ 1–3 µs per multiply-add): small shapes, validation, the bench.

Every evaluation has a deadline (``timeout`` seconds): exceeding it raises :class:`GoldenTimeoutError`.
Non-finite inputs give the float64 evaluation of the formula (NaN/inf), marked ``info["certified"] = False``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import mpmath
import numpy as np
import torch

from golden import dd
from golden.dd import DD
from golden.rounding import round_dd

__all__ = [
    "Golden",
    "GoldenError",
    "GoldenPrecisionError",
    "GoldenTimeoutError",
    "attention",
    "block",
    "layernorm",
    "rmsnorm",
    "rmsnorm_vjp",
    "silu",
    "swiglu",
    "swiglu_vjp",
]

DEFAULT_PREC = 128  # bits of the mpmath evaluator (the recomputation uses prec + 64)
DEFAULT_TOL_BITS = 100  # target: |golden − exact| ≤ 2^-100 · max(|exact|, scale)
DEFAULT_TIMEOUT = 120.0  # seconds per golden evaluation
_TERM_BUDGET = 1 << 19  # float64 elements per chunk of a matrix–vector product (4 MiB: stays in cache)


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
        ctx = ctx or _context(160)
        return ctx.mpf(float(self.hi[index])) + ctx.mpf(float(self.lo[index]))

    def __repr__(self) -> str:
        return f"Golden({self.name}, shape={self.shape}, method={self.info.get('method')})"


# ---------------------------------------------------------------------------------------------- options
@dataclasses.dataclass(frozen=True)
class _Opts:
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


class _Deadline:
    def __init__(self, name: str, timeout: float) -> None:
        self.name, self.timeout, self.end = name, timeout, time.monotonic() + timeout

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise GoldenTimeoutError(
                f"golden.{self.name}: evaluation exceeded its time budget of {self.timeout:g} s; pass a larger "
                f"timeout=..., a smaller shape, or method='fast' (the mpmath evaluator costs ~2 µs per multiply-add)"
            )


def _context(prec: int) -> Any:
    """A private mpmath context (never the global ``mpmath.mp``)."""
    ctx = mpmath.MPContext()
    ctx.prec = prec
    return ctx


# ------------------------------------------------------------------------------------------- inputs
def _exact(t: Any, what: str) -> np.ndarray:
    """The exact values of a tensor/array as numpy: float32 for ≤ 24-bit formats (exact), float64 otherwise.

    bf16/fp16 → fp32 and fp32 → fp64 are exact conversions; nothing is rounded. Never writes to the input.
    """
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if not t.is_floating_point():
            raise TypeError(f"golden: {what} must be a float tensor, got {t.dtype}")
        if t.dtype == torch.bfloat16 and sys.byteorder == "little":  # bf16 = the high half of an fp32: copy bits
            bits = t.to("cpu").contiguous().view(torch.int16).numpy().view(np.uint16)
            out = np.zeros(bits.shape, dtype=np.uint32)
            out.view(np.uint16).reshape(*bits.shape, 2)[..., 1] = bits
            return out.view(np.float32)
        if t.dtype in (torch.float16, torch.float32):
            return t.to(device="cpu", dtype=torch.float32).numpy()
        if t.dtype == torch.float64:
            return t.to(device="cpu").numpy()
        raise TypeError(f"golden: unsupported dtype {t.dtype} for {what}")
    a = np.asarray(t)
    if a.dtype == np.float32:
        return a
    if a.dtype.kind in "fiu" and a.dtype.itemsize <= 8:
        return a.astype(np.float64)
    raise TypeError(f"golden: cannot read {what} of type {type(t).__name__} / dtype {a.dtype}")


def _in_fast_range(*arrays: np.ndarray) -> bool:
    """The fast path's validity range: finite, and float64 data with 2^-900 < |v| < 2^500 or v = 0."""
    for a in arrays:
        if a.dtype == np.float32 or a.size == 0:
            continue
        with np.errstate(all="ignore"):
            m = np.abs(a)
            if not np.isfinite(m).all() or m.max() >= 2.0**500 or (m[m > 0].min(initial=1.0) <= 2.0**-900):
                return False
    return True


def _all_finite(*arrays: np.ndarray) -> bool:
    return all(bool(np.isfinite(a).all()) for a in arrays)


def _scalar(v: Any, what: str) -> float:
    if isinstance(v, torch.Tensor):
        v = v.item()
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"golden: {what} must be finite, got {v}")
    return v


# ----------------------------------------------------------------------------------- DD building blocks
class _Stats:
    """Worst certified relative bound of the sums of one evaluation (for ``info``)."""

    def __init__(self) -> None:
        self.sum_bound_rel = 0.0
        self.kernel_checks = 0

    def record(self, s: DD, bound: np.ndarray) -> None:
        with np.errstate(all="ignore"):
            rel = np.where(bound == 0, 0.0, bound / np.abs(s.hi))
        finite = rel[np.isfinite(rel)]
        if finite.size:
            self.sum_bound_rel = max(self.sum_bound_rel, float(finite.max()))


def _sum_terms(terms: np.ndarray, tol_bits: int, stats: _Stats, overwrite: bool = False) -> DD:
    s, bound = dd.acc_sum(terms, tol_bits=tol_bits + 4, overwrite=overwrite)
    stats.record(s, bound)
    return s


def _prod_terms(a: DD, b: DD) -> list[np.ndarray]:
    """Terms summing to a·b up to ≤ u²·|a·b|: TwoProd(a.hi, b.hi) exactly, plus the cross terms."""
    p, e = dd.two_prod(a.hi, b.hi)
    return [p, e, a.hi * b.lo, a.lo * b.hi]


def _dot(a: DD, b: DD, axis: int, tol_bits: int, stats: _Stats) -> DD:
    """Σ_axis a·b for broadcastable DD arrays (small shapes: attention scores and mixing)."""
    terms = _prod_terms(a, b)
    stacked = np.concatenate([np.moveaxis(t, axis, -1) for t in np.broadcast_arrays(*terms)], axis=-1)
    return _sum_terms(stacked, tol_bits, stats, overwrite=False)


_POOL: ThreadPoolExecutor | None = None


def _pool_map(fn: Callable[[int], Any], items: list[int], work: int) -> list[Any]:
    """Map over chunks, on a small thread pool when the work is large (numpy ufuncs release the GIL)."""
    global _POOL
    workers = max(1, min(4, os.cpu_count() or 1))
    if work < (1 << 20) or len(items) < 2 or workers == 1:
        return [fn(i) for i in items]
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="golden")
    return list(_POOL.map(fn, items))


def _gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ bᵀ in float64. Small products run single-threaded (torch, one intra-op thread for the call): on a
    busy machine a multi-threaded BLAS spins and is 20× slower on such sizes. Exactness does not depend on the
    summation order (see :func:`_ozaki_bits`), so any GEMM is correct here.
    """
    if a.shape[0] * b.shape[0] * a.shape[1] >= (1 << 26):
        return a @ b.T
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return (torch.from_numpy(a) @ torch.from_numpy(b).T).numpy()
    finally:
        torch.set_num_threads(prev)


def _ozaki_bits(n: int, w_narrow: bool) -> tuple[int, int]:
    """(bits of an x slice, bits of a W slice) such that every partial sum of n slice products is exact.

    Slices on grids g_x, g_w hold integers below 2^b_x, 2^b_w (in units of g), so a product is an integer
    multiple of g_x·g_w below 2^(b_x + b_w) and a sum of n of them stays below 2^53 units iff
    b_x + b_w + ⌈log2 n⌉ ≤ 53: every partial sum, in any order and with or without FMA, is then exact.
    ≤ 24-bit weights get wide slices (b_w = 28: one slice covers a bf16/fp16 row of ≤ 20 binades, so the big
    matrix is read once) and x narrow ones; float64 weights split the budget evenly.
    """
    budget = 53 - int(np.ceil(np.log2(max(n, 2))))
    b_w = 28 if w_narrow else budget // 2
    return budget - b_w, b_w


def _slice_rows(
    hi: np.ndarray, lo: np.ndarray | None, bits: int, max_slices: int, rel_stop: float = 0.0, copy: bool = True
):
    """Error-free slicing of the rows of hi (+ lo): Σ_j S_j + R = hi + lo exactly, S_j on the per-row grid
    2^-53·σ_j holding integers below 2^bits (extraction q = fl((σ + r) − σ), σ = 2^(54−bits)·nextpow2(max|r|);
    a DD remainder is renormalised by TwoSum, also exact). Slicing stops when the remainder R is zero or, with
    ``rel_stop`` > 0, when max|R_i| ≤ rel_stop·max|row_i|. Returns (slices, grids, max|R| per row) or None.
    """
    shift = 54 - bits
    r_hi = np.array(hi, dtype=np.float64, copy=copy)
    r_lo = None if lo is None or not np.any(lo) else np.array(lo, dtype=np.float64, copy=True)
    slices, grids = [], []
    mu0 = None
    for _ in range(max_slices):
        if r_lo is not None:
            r_hi, r_lo = dd.two_sum(r_hi, r_lo)
            mu = np.max(np.abs(r_hi), axis=1) * (1 + 2.0**-50) + np.max(np.abs(r_lo), axis=1)
        else:  # max|r| without an |r| temporary
            mu = np.maximum(r_hi.max(axis=1), -r_hi.min(axis=1))
        if mu0 is None:
            mu0 = mu
        elif not np.any(mu > rel_stop * mu0):
            return slices, grids, mu
        sigma = np.ldexp(dd._nextpow2(mu), shift)[:, None]
        q = r_hi + sigma
        q -= sigma
        r_hi -= q
        slices.append(q)
        grids.append(np.ldexp(sigma[:, 0], -53))
        if not r_hi.any() and (r_lo is None or not r_lo.any()):
            return slices, grids, np.zeros(r_hi.shape[0])
    return None


def _matvec_ozaki(W: np.ndarray, X: DD, tol_bits: int, exact_x: bool = False) -> tuple[DD, np.ndarray] | None:
    """W x by the Ozaki–Ogita–Oishi error-free splitting: x = Σ_a X_a + R, W = Σ_b W_b (rows sliced as in
    :func:`_slice_rows`, widths from :func:`_ozaki_bits`), every X_a W_bᵀ computed *exactly* by float64 GEMM, and
    the s_x·s_w exact partial results of each output summed by :func:`golden.dd.acc_sum`. W is processed in
    cache-sized row chunks (read once). The x remainder R (max|R_i| ≤ 2^-(tol+8+⌈log2 n⌉)·max|x_i|, or R = 0
    with ``exact_x``) is left out and bounded by max|R_i|·‖W_m‖₁. Returns (W x, error bound), or None when not
    applicable (then the per-product path is used).
    """
    M, n = W.shape
    N = X.hi.shape[0]
    b_x, b_w = _ozaki_bits(n, W.dtype == np.float32)
    rel_stop = 0.0 if exact_x else 2.0 ** -(tol_bits + 8 + int(np.ceil(np.log2(max(n, 2)))))
    xs = _slice_rows(X.hi, X.lo, b_x, 48 if exact_x else 24, rel_stop)
    if xs is None or not xs[0]:
        return None
    x_all = np.concatenate(xs[0])  # (s_x·N, n)
    sx = len(xs[0])
    gx = np.concatenate([g[g > 0] for g in xs[1]] + [np.ones(1)])
    lo_x, hi_x = gx.min(), gx.max()
    truncated = bool(np.any(xs[2]))
    out_hi, out_lo, out_b = np.empty((N, M)), np.empty((N, M)), np.empty((N, M))
    ch = max(1, min(M, (1 << 18) // max(1, n)))
    failed: list[bool] = []

    def run(i: int) -> None:
        Wc = W[i : i + ch].astype(np.float64)
        w_l1 = np.abs(Wc).sum(axis=1) if truncated else None  # ‖W_m‖₁ for the bound on the x remainder
        ws = _slice_rows(Wc, None, b_w, 8, copy=False)
        if ws is None:
            failed.append(True)
            return
        gw = np.concatenate([g[g > 0] for g in ws[1]] + [np.ones(1)])
        if lo_x * gw.min() < 2.0**-1000 or hi_x * gw.max() > 2.0**900 / (n * 2.0**110):  # keep products normal
            failed.append(True)
            return
        c, sw = Wc.shape[0], len(ws[0])
        prod = _gemm(x_all, np.concatenate(ws[0]) if sw > 1 else ws[0][0])  # exact slice-product sums
        parts = prod.reshape(sx, N, sw, c).transpose(1, 3, 0, 2).reshape(N, c, sx * sw)
        s, bound = dd.acc_sum(parts, tol_bits=tol_bits + 4)
        if w_l1 is not None:
            bound = bound + xs[2][:, None] * w_l1[None, :] * (1 + 2.0**-40)
        out_hi[:, i : i + c], out_lo[:, i : i + c], out_b[:, i : i + c] = s.hi, s.lo, bound

    _pool_map(run, list(range(0, M, ch)), M * n * max(1, sx))
    if failed:
        return None
    return DD(out_hi, out_lo), out_b


def _matvec(W: np.ndarray, x: DD, x_narrow: bool, tol_bits: int, stats: _Stats, dl: _Deadline) -> DD:
    """y = W x for W (M, n) exact (float32 = ≤ 24-bit values, or float64) and DD rows x (..., n) → DD (..., M).

    Terms per product (all exact): ≤24-bit × ≤24-bit: x·w; ≤24-bit W × float64/DD x: Veltkamp halves
    x = x₁ + x₂ (26 + 27 bits), x₁·w and x₂·w; float64 W: TwoProd(x, w) = p + e. The DD tails x.lo·w
    (≤ 2^-53 of the term) are added by one float64 product per chunk, error ≤ γ_n·u·Σ|x·w|.
    """
    M, n = W.shape
    lead = x.shape[:-1]
    X = x.reshape(-1, n)
    N = X.hi.shape[0]
    if (N >= 2 or W.dtype == np.float32) and n > 0 and M > 0:  # error-free slicing + BLAS: W read once
        res = _matvec_ozaki(W, X, tol_bits)
        if res is not None and np.any(res[1] > np.ldexp(np.abs(res[0].hi), -(tol_bits + 2))):
            res = _matvec_ozaki(W, X, tol_bits, exact_x=True)  # cancellation: slice x completely (no remainder)
        if res is not None:
            stats.record(*res)
            return DD(res[0].hi.reshape(*lead, M), res[0].lo.reshape(*lead, M))
    has_lo = bool(np.any(X.lo))
    w_narrow = W.dtype == np.float32
    if w_narrow and x_narrow and not has_lo:
        factors = [X.hi]
    elif w_narrow:
        factors = list(dd.split(X.hi))
    else:
        factors = None  # TwoProd against the float64 chunk
    k = 2 if factors is None else len(factors)
    ch = max(1, min(M, _TERM_BUDGET // max(1, N * k * n)))
    if N * M * n * k >= (1 << 20):
        ch = min(ch, max(1, -(-M // 4)))  # at least four chunks, for the thread pool
    starts = list(range(0, M, ch))
    # a priori bound on max|term| per (row, output): max|w_m|·max|x| (Veltkamp halves and TwoProd errors are smaller)
    wmax = np.max(np.abs(W), axis=1).astype(np.float64) if n else np.zeros(M)
    xmax = np.max(np.abs(X.hi), axis=1) if n else np.zeros(N)
    out_hi = np.empty((N, M))
    out_lo = np.empty((N, M))

    def run(i: int) -> None:
        dl.check()
        Wc = W[i : i + ch].astype(np.float64)  # (c, n), exact
        c = Wc.shape[0]
        terms = np.empty((N, c, k * n))
        if factors is None:
            p, e = dd.two_prod(X.hi[:, None, :], Wc[None])
            terms[:, :, :n], terms[:, :, n:] = p, e
        else:
            for j, f in enumerate(factors):
                np.multiply(f[:, None, :], Wc[None], out=terms[:, :, j * n : (j + 1) * n])
        mu = (xmax[:, None] * wmax[None, i : i + c]) * (1.0 + 2.0**-20)  # ≥ max|term|, rounding included
        s, bound = dd.acc_sum(terms, tol_bits=tol_bits + 4, overwrite=True, mu=mu)
        if has_lo:
            s = dd.add_d(s, X.lo @ Wc.T)
        stats.record(s, bound)
        out_hi[:, i : i + c], out_lo[:, i : i + c] = s.hi, s.lo

    _pool_map(run, starts, N * M * n * k)
    return DD(out_hi.reshape(*lead, M), out_lo.reshape(*lead, M))


def _check_kernel(name: str, arg: DD, out: DD, fn_mp: Callable[[Any, Any], Any], opts: _Opts, stats: _Stats) -> None:
    """Self-validation of a DD kernel: recompute a sample of outputs with mpmath at prec + 64 bits."""
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
    ctx = _context(opts.prec + 64)
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


# ----------------------------------------------------------------------------------------- DD maths
def _rsqrt_dd(v: DD, opts: _Opts, stats: _Stats) -> DD:
    root = dd.sqrt(v)
    _check_kernel("sqrt", v, root, lambda ctx, a: ctx.sqrt(a), opts, stats)
    return dd.div(DD.of(np.ones_like(v.hi)), root)


def _exp_dd(a: DD, opts: _Opts, stats: _Stats) -> DD:
    out = dd.exp(a)
    _check_kernel("exp", a, out, lambda ctx, z: ctx.exp(z), opts, stats)
    return out


def _square_sum(x: DD, tol_bits: int, stats: _Stats) -> DD:
    """Σ x² along the last axis: TwoProd(hi, hi) + 2·hi·lo (+ lo², negligible) per element, summed exactly."""
    p, e = dd.two_prod(x.hi, x.hi)
    parts = [p, e] if not np.any(x.lo) else [p, e, 2.0 * x.hi * x.lo]
    return _sum_terms(np.concatenate(parts, axis=-1), tol_bits, stats)


def _rmsnorm_dd(x: DD, w: np.ndarray, eps: float, opts: _Opts, stats: _Stats) -> tuple[DD, DD]:
    """y = x · r · w with r = (Σx²/D + ε)^(-1/2); returns (y, r) with r of shape (..., 1)."""
    D = x.shape[-1]
    ms = dd.div(_square_sum(x, opts.tol_bits, stats), DD.of(np.full(x.shape[:-1], float(D))))
    r = _rsqrt_dd(dd.add_d(ms, eps), opts, stats)
    r = DD(r.hi[..., None], r.lo[..., None])
    return dd.mul_d(dd.mul(x, r), w.astype(np.float64)), r


def _silu_dd(z: DD, opts: _Opts, stats: _Stats) -> tuple[DD, DD]:
    """silu(z) = z·σ(z), σ(z) = 1/(1 + e^(−z)) for z ≥ 0 and e^z/(1 + e^z) for z < 0 (no overflow). → (silu, σ)."""
    neg_abs = DD(-np.abs(z.hi), np.where(z.hi >= 0, -z.lo, z.lo))
    e = _exp_dd(neg_abs, opts, stats)  # e^(−|z|) ∈ (0, 1]
    one = np.ones_like(z.hi)
    num = DD(np.where(z.hi >= 0, one, e.hi), np.where(z.hi >= 0, 0.0, e.lo))
    sig = dd.div(num, dd.add_d(e, 1.0))
    return dd.mul(z, sig), sig


def _swiglu_dd(
    x: DD, x_narrow: bool, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray, opts: _Opts, stats: _Stats, dl: _Deadline
) -> tuple[DD, dict[str, DD]]:
    g = _matvec(Wg, x, x_narrow, opts.tol_bits, stats, dl)  # (..., F)
    u = _matvec(Wu, x, x_narrow, opts.tol_bits, stats, dl)
    s, sig = _silu_dd(g, opts, stats)
    h = dd.mul(s, u)
    y = _matvec(Wd, h, False, opts.tol_bits, stats, dl)  # (..., D)
    return y, {"g": g, "u": u, "s": s, "sig": sig, "h": h}


@functools.lru_cache(maxsize=64)
def _rope_tables(T: int, K: int, theta: float) -> tuple[DD, DD]:
    """cos, sin of angle[t, j] = t·θ^(−2(j mod K/2)/K) as DD (T, K), from mpmath at 200 bits (exact θ)."""
    ctx = _context(200)
    cos_hi, cos_lo, sin_hi, sin_lo = (np.zeros((T, K)) for _ in range(4))
    for i in range(K // 2):
        freq = ctx.power(ctx.mpf(theta), ctx.mpf(-2 * i) / K)
        for t in range(T):
            c, s = ctx.cos(t * freq), ctx.sin(t * freq)
            for j in (i, i + K // 2):
                cos_hi[t, j] = float(c)
                cos_lo[t, j] = float(c - cos_hi[t, j])
                sin_hi[t, j] = float(s)
                sin_lo[t, j] = float(s - sin_hi[t, j])
    return DD(cos_hi, cos_lo), DD(sin_hi, sin_lo)


@functools.lru_cache(maxsize=64)
def _inv_sqrt(K: int) -> tuple[float, float]:
    ctx = _context(200)
    v = 1 / ctx.sqrt(K)
    hi = float(v)
    return hi, float(v - hi)


def _rotate_half(a: DD) -> DD:
    K = a.hi.shape[-1]
    return DD(
        np.concatenate([-a.hi[..., K // 2 :], a.hi[..., : K // 2]], -1),
        np.concatenate([-a.lo[..., K // 2 :], a.lo[..., : K // 2]], -1),
    )


def _attention_dd(
    x: DD,
    x_narrow: bool,
    wq: np.ndarray,
    wk: np.ndarray,
    wv: np.ndarray,
    wo: np.ndarray,
    cfg: Any,
    opts: _Opts,
    stats: _Stats,
    dl: _Deadline,
) -> DD:
    B, T, D = x.shape
    H, G = cfg.n_heads, cfg.n_kv_heads
    K = D // H
    tol = opts.tol_bits
    q = _matvec(wq, x, x_narrow, tol, stats, dl).reshape(B, T, H, K)
    k = _matvec(wk, x, x_narrow, tol, stats, dl).reshape(B, T, G, K)
    v = _matvec(wv, x, x_narrow, tol, stats, dl).reshape(B, T, G, K)
    cos, sin = _rope_tables(T, K, float(cfg.rope_theta))
    cos, sin = cos.reshape(1, T, 1, K), sin.reshape(1, T, 1, K)
    q = dd.add(dd.mul(q, cos), dd.mul(_rotate_half(q), sin))
    k = dd.add(dd.mul(k, cos), dd.mul(_rotate_half(k), sin))
    rep = H // G
    kh = DD(np.repeat(k.hi, rep, axis=2), np.repeat(k.lo, rep, axis=2))  # (B, T, H, K): head h reads h // rep
    vh = DD(np.repeat(v.hi, rep, axis=2), np.repeat(v.lo, rep, axis=2))
    # scores[b, h, t, s] = Σ_j q[b, t, h, j] k[b, s, h, j] / √K
    qa = DD(q.hi.transpose(0, 2, 1, 3)[:, :, :, None, :], q.lo.transpose(0, 2, 1, 3)[:, :, :, None, :])
    ka = DD(kh.hi.transpose(0, 2, 1, 3)[:, :, None, :, :], kh.lo.transpose(0, 2, 1, 3)[:, :, None, :, :])
    scores = _dot(qa, ka, -1, tol, stats)  # (B, H, T, T)
    ih, il = _inv_sqrt(K)
    scores = dd.mul(scores, DD(np.full(scores.shape, ih), np.full(scores.shape, il)))
    causal = np.tril(np.ones((T, T), dtype=bool))
    m = np.where(causal, scores.hi, -np.inf).max(axis=-1, keepdims=True)
    e = _exp_dd(dd.add_d(scores, -np.broadcast_to(m, scores.shape)), opts, stats)
    e = DD(np.where(causal, e.hi, 0.0), np.where(causal, e.lo, 0.0))
    Z = _sum_terms(np.concatenate([e.hi, e.lo], axis=-1), tol, stats)  # (B, H, T)
    p = dd.div(e, DD(Z.hi[..., None], Z.lo[..., None]))  # (B, H, T, S)
    # heads[b, t, h, j] = Σ_s p[b, h, t, s] v[b, s, h, j]
    pa = DD(p.hi[..., None], p.lo[..., None])  # (B, H, T, S, 1)
    va = DD(vh.hi.transpose(0, 2, 1, 3)[:, :, None, :, :], vh.lo.transpose(0, 2, 1, 3)[:, :, None, :, :])
    heads = _dot(pa, va, 3, tol, stats)  # (B, H, T, K)
    heads = DD(heads.hi.transpose(0, 2, 1, 3).reshape(B, T, H * K), heads.lo.transpose(0, 2, 1, 3).reshape(B, T, H * K))
    return _matvec(wo, heads, False, tol, stats, dl)


def _block_dd(x: np.ndarray, P: Mapping[str, np.ndarray], cfg: Any, opts: _Opts, stats: _Stats, dl: _Deadline) -> DD:
    xd = DD.of(x)
    a, _ = _rmsnorm_dd(xd, P["attn_norm.weight"], cfg.norm_eps, opts, stats)
    att = _attention_dd(
        a,
        False,
        P["attn.wq.weight"],
        P["attn.wk.weight"],
        P["attn.wv.weight"],
        P["attn.wo.weight"],
        cfg,
        opts,
        stats,
        dl,
    )
    h = dd.add_d(att, x.astype(np.float64))
    b, _ = _rmsnorm_dd(h, P["ffn_norm.weight"], cfg.norm_eps, opts, stats)
    f, _ = _swiglu_dd(b, False, P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"], opts, stats, dl)
    return dd.add(h, f)


# ---------------------------------------------------------------------------------- mpmath evaluator
class _MP:
    """Plain mpmath evaluation of the definitions in a private context; returns (values, scales) as object arrays."""

    def __init__(self, prec: int, dl: _Deadline) -> None:
        self.ctx = _context(prec)
        self.dl = dl

    def arr(self, a: np.ndarray) -> np.ndarray:
        mpf = self.ctx.mpf
        out = np.empty(a.shape, dtype=object)
        flat = out.reshape(-1)
        for i, v in enumerate(np.asarray(a, dtype=np.float64).reshape(-1).tolist()):
            if i % 4096 == 0:
                self.dl.check()
            flat[i] = mpf(v)
        return out

    def rmsnorm(self, X: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
        ctx = self.ctx
        X2 = X.reshape(-1, X.shape[-1])
        out = np.empty(X2.shape, dtype=object)
        eps_m = ctx.mpf(eps)
        for i in range(X2.shape[0]):
            self.dl.check()
            row = list(X2[i])
            ms = ctx.fdot(row, row) / len(row)
            r = 1 / ctx.sqrt(ms + eps_m) if ms + eps_m != 0 else ctx.nan
            out[i] = [xv * r * wv for xv, wv in zip(row, w, strict=True)]
        return out.reshape(X.shape)

    def layernorm(self, X: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
        ctx = self.ctx
        X2 = X.reshape(-1, X.shape[-1])
        out = np.empty(X2.shape, dtype=object)
        scale = np.empty(X2.shape, dtype=object)
        for i in range(X2.shape[0]):
            self.dl.check()
            row = list(X2[i])
            mu = ctx.fsum(row) / len(row)
            c = [v - mu for v in row]
            var = ctx.fdot(c, c) / len(row)
            r = 1 / ctx.sqrt(var + ctx.mpf(eps)) if var + eps != 0 else ctx.nan
            out[i] = [cv * r * wv + bv for cv, wv, bv in zip(c, w, b, strict=True)]
            scale[i] = [(abs(v) + abs(mu)) * r * abs(wv) + abs(bv) for v, wv, bv in zip(row, w, b, strict=True)]
        return out.reshape(X.shape), scale.reshape(X.shape)  # scale: x − μ cancels, so |x| + |μ| sets the error

    def silu(self, z: Any) -> Any:
        return z / (1 + self.ctx.exp(-z))

    def linear(self, W: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(W x, Σ|W||x|) for object arrays W (M, n), X (..., n)."""
        ctx = self.ctx
        X2 = X.reshape(-1, X.shape[-1])
        M = W.shape[0]
        out = np.empty((X2.shape[0], M), dtype=object)
        scale = np.empty((X2.shape[0], M), dtype=object)
        rows = [list(W[m]) for m in range(M)]
        arows = [[abs(v) for v in r] for r in rows]
        for i in range(X2.shape[0]):
            xr = list(X2[i])
            ax = [abs(v) for v in xr]
            for m in range(M):
                if m % 64 == 0:
                    self.dl.check()
                out[i, m] = ctx.fdot(rows[m], xr)
                scale[i, m] = ctx.fdot(arows[m], ax)
        return out.reshape(*X.shape[:-1], M), scale.reshape(*X.shape[:-1], M)

    def swiglu(self, X: np.ndarray, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g, _ = self.linear(Wg, X)
        u, _ = self.linear(Wu, X)
        h = np.empty(g.shape, dtype=object)
        for i, (gv, uv) in enumerate(zip(g.reshape(-1), u.reshape(-1), strict=True)):
            h.reshape(-1)[i] = self.silu(gv) * uv
        return self.linear(Wd, h)

    def attention(
        self, X: np.ndarray, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray, wo: np.ndarray, cfg: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        ctx = self.ctx
        B, T, D = X.shape
        H, G = cfg.n_heads, cfg.n_kv_heads
        K = D // H
        rep = H // G
        q = self.linear(wq, X)[0].reshape(B, T, H, K)
        k = self.linear(wk, X)[0].reshape(B, T, G, K)
        v = self.linear(wv, X)[0].reshape(B, T, G, K)
        theta = ctx.mpf(float(cfg.rope_theta))
        freqs = [ctx.power(theta, ctx.mpf(-2 * i) / K) for i in range(K // 2)]

        def rope(vec: np.ndarray, t: int) -> list[Any]:
            out = [None] * K
            for i in range(K // 2):
                c, s = ctx.cos(t * freqs[i]), ctx.sin(t * freqs[i])
                a, b = vec[i], vec[i + K // 2]
                out[i] = a * c - b * s
                out[i + K // 2] = b * c + a * s
            return out

        qr = [[[rope(q[b, t, h], t) for h in range(H)] for t in range(T)] for b in range(B)]
        kr = [[[rope(k[b, t, g], t) for g in range(G)] for t in range(T)] for b in range(B)]
        heads = np.empty((B, T, H * K), dtype=object)
        inv = 1 / ctx.sqrt(K)
        for b in range(B):
            self.dl.check()
            for h in range(H):
                g = h // rep
                for t in range(T):
                    sc = [ctx.fdot(qr[b][t][h], kr[b][s][g]) * inv for s in range(t + 1)]
                    m = max(sc)
                    ex = [ctx.exp(s - m) for s in sc]
                    Z = ctx.fsum(ex)
                    for j in range(K):
                        heads[b, t, h * K + j] = ctx.fdot(ex, [v[b, s, g, j] for s in range(t + 1)]) / Z
        return self.linear(wo, heads)

    def block(self, X: np.ndarray, P: Mapping[str, np.ndarray], cfg: Any) -> tuple[np.ndarray, np.ndarray]:
        a = self.rmsnorm(X, P["attn_norm.weight"], cfg.norm_eps)
        att, s1 = self.attention(
            a, P["attn.wq.weight"], P["attn.wk.weight"], P["attn.wv.weight"], P["attn.wo.weight"], cfg
        )
        h = X + att
        b = self.rmsnorm(h, P["ffn_norm.weight"], cfg.norm_eps)
        f, s2 = self.swiglu(b, P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"])
        scale = np.vectorize(abs, otypes=[object])(X) + s1 + s2  # the residual carries the attention's error
        return h + f, scale


def _mp_to_dd(vals: np.ndarray) -> DD:
    flat = vals.reshape(-1)
    hi = np.empty(flat.shape[0])
    lo = np.empty(flat.shape[0])
    for i, v in enumerate(flat):
        h = float(v)
        hi[i] = h
        lo[i] = float(v - h) if math.isfinite(h) else 0.0
    return DD(hi.reshape(vals.shape), lo.reshape(vals.shape))


def _mp_eval(
    name: str, fn: Callable[[_MP], tuple[np.ndarray, np.ndarray | None]], opts: _Opts, dl: _Deadline
) -> tuple[DD, dict[str, Any]]:
    """Evaluate at prec and prec + 64 bits; raise GoldenPrecisionError if they disagree beyond the target."""
    lo_res, _ = fn(_MP(opts.prec, dl))
    hi_mp = _MP(opts.prec + 64, dl)
    hi_res, scale = fn(hi_mp)
    _compare_mp(name, _mp_to_dd(lo_res), hi_res, scale, opts, f"mpmath at {opts.prec} bits")
    return _mp_to_dd(hi_res), {"method": "mpmath", "prec": opts.prec + 64, "validated": f"recomputed at {opts.prec}"}


def _compare_mp(name: str, got: DD, ref: np.ndarray, scale: np.ndarray | None, opts: _Opts, what: str) -> float:
    """max |got − ref| / max(|ref|, scale) over the elements; raise GoldenPrecisionError above 2^-tol_bits."""
    ctx = _context(opts.prec + 64)
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


def _evaluate(
    name: str,
    fast: Callable[[_Stats, _Deadline], DD],
    mp_fn: Callable[[_MP], tuple[np.ndarray, Any]],
    fast_ok: bool,
    opts: _Opts,
    out_shape: tuple[int, ...] | None = None,
) -> tuple[DD, dict[str, Any]]:
    dl = _Deadline(name, opts.timeout)
    use_fast = opts.method == "fast" or (opts.method == "auto" and fast_ok)
    if opts.method == "fast" and not fast_ok:
        raise ValueError(
            f"golden.{name}: inputs outside the fast path's range (non-finite, or float64 with "
            f"|v| ≥ 2^500 or 0 < |v| ≤ 2^-900); use method='mpmath' or 'auto'"
        )
    if not use_fast:
        return _mp_eval(name, mp_fn, opts, dl)
    stats = _Stats()
    with np.errstate(all="ignore"):  # 0/0 of a zero row with ε = 0 is the definition's NaN, not a warning
        res = fast(stats, dl)
    info: dict[str, Any] = {
        "method": "fast",
        "tol_bits": opts.tol_bits,
        "sum_bound_rel": stats.sum_bound_rel,
        "kernel_checks": stats.kernel_checks,
        "validated": opts.validate,
    }
    if opts.validate == "full":
        ref, scale = mp_fn(_MP(opts.prec + 64, dl))
        info["full_check_rel"] = _compare_mp(name, res, ref, scale, opts, "the fast path")
    return res, info


def _golden(name: str, res: DD, info: dict[str, Any], certified: bool = True) -> Golden:
    info = dict(info, certified=certified)
    shape = np.shape(res.hi)  # (ascontiguousarray would promote a 0-d result to 1-d)
    return Golden(np.ascontiguousarray(res.hi).reshape(shape), np.ascontiguousarray(res.lo).reshape(shape), name, info)


def _nonfinite(name: str, value: np.ndarray) -> Golden:
    with np.errstate(all="ignore"):
        return Golden(
            np.asarray(value, dtype=np.float64),
            np.zeros(np.shape(value)),
            name,
            {"method": "float64", "certified": False},
        )


# --------------------------------------------------------------------------------------- public API
def rmsnorm(x: Any, weight: Any, eps: float, **opts: Any) -> Golden:
    """Golden RMSNorm: y = x / √(mean(x², −1) + ε) ⊙ w, exactly (x (..., D), w (D,), ε a float)."""
    o = _Opts(**opts)
    X, w, eps = _exact(x, "x"), _exact(weight, "weight"), _scalar(eps, "eps")
    _check_last(X, w, "rmsnorm", "weight")
    if not _all_finite(X, w):
        with np.errstate(all="ignore"):
            X64 = X.astype(np.float64)
            return _nonfinite("rmsnorm", X64 / np.sqrt(np.mean(X64**2, -1, keepdims=True) + eps) * w)
    narrow = X.dtype == np.float32

    def fast(stats: _Stats, dl: _Deadline) -> DD:
        xd = DD.of(X.astype(np.float64))
        if narrow:  # x² is exact in float64: one term per element
            ss = _sum_terms(xd.hi * xd.hi, o.tol_bits, stats, overwrite=True)
            D = X.shape[-1]
            ms = dd.div(ss, DD.of(np.full(X.shape[:-1], float(D))))
            r = _rsqrt_dd(dd.add_d(ms, eps), o, stats)
            r = DD(r.hi[..., None], r.lo[..., None])
            return dd.mul_d(dd.mul_d(r, xd.hi), w.astype(np.float64))
        return _rmsnorm_dd(xd, w, eps, o, stats)[0]

    def mp(m: _MP) -> tuple[np.ndarray, None]:
        return m.rmsnorm(m.arr(X), m.arr(w), eps), None

    res, info = _evaluate("rmsnorm", fast, mp, _in_fast_range(X, w), o)
    return _golden("rmsnorm", res, info)


def layernorm(x: Any, weight: Any, bias: Any, eps: float, **opts: Any) -> Golden:
    """Golden LayerNorm: y = (x − μ)/√(Σ(x − μ)²/D + ε) ⊙ w + b, μ = Σx/D (biased variance), exactly."""
    o = _Opts(**opts)
    X, w, b, eps = _exact(x, "x"), _exact(weight, "weight"), _exact(bias, "bias"), _scalar(eps, "eps")
    _check_last(X, w, "layernorm", "weight")
    _check_last(X, b, "layernorm", "bias")
    if not _all_finite(X, w, b):
        with np.errstate(all="ignore"):
            X64 = X.astype(np.float64)
            c = X64 - X64.mean(-1, keepdims=True)
            return _nonfinite("layernorm", c / np.sqrt((c**2).mean(-1, keepdims=True) + eps) * w + b)

    def fast(stats: _Stats, dl: _Deadline) -> DD:
        x64 = X.astype(np.float64)
        D = X.shape[-1]
        mu = dd.div(_sum_terms(x64, o.tol_bits, stats), DD.of(np.full(X.shape[:-1], float(D))))
        c = dd.add_d(DD(-mu.hi[..., None] + 0 * x64, -mu.lo[..., None] + 0 * x64), x64)  # x − μ
        var = dd.div(_square_sum(c, o.tol_bits, stats), DD.of(np.full(X.shape[:-1], float(D))))
        r = _rsqrt_dd(dd.add_d(var, eps), o, stats)
        y = dd.mul_d(dd.mul(c, DD(r.hi[..., None], r.lo[..., None])), w.astype(np.float64))
        return dd.add_d(y, b.astype(np.float64))

    def mp(m: _MP) -> tuple[np.ndarray, np.ndarray]:
        return m.layernorm(m.arr(X), m.arr(w), m.arr(b), eps)

    res, info = _evaluate("layernorm", fast, mp, _in_fast_range(X, w, b), o)
    return _golden("layernorm", res, info)


def silu(z: Any, **opts: Any) -> Golden:
    """Golden SiLU (Swish-1): silu(z) = z / (1 + e^(−z)), elementwise, exactly."""
    o = _Opts(**opts)
    Z = _exact(z, "z")
    if not _all_finite(Z):
        with np.errstate(all="ignore"):
            Z64 = Z.astype(np.float64)
            return _nonfinite("silu", Z64 / (1 + np.exp(-Z64)))

    def fast(stats: _Stats, dl: _Deadline) -> DD:
        return _silu_dd(DD.of(Z.astype(np.float64)), o, stats)[0]

    def mp(m: _MP) -> tuple[np.ndarray, None]:
        return np.vectorize(m.silu, otypes=[object])(m.arr(Z)) if Z.size else np.empty(Z.shape, object), None

    res, info = _evaluate("silu", fast, mp, _in_fast_range(Z), o)
    return _golden("silu", res, info)


def swiglu(x: Any, w_gate: Any, w_up: Any, w_down: Any, **opts: Any) -> Golden:
    """Golden SwiGLU: y = W_down (silu(W_gate x) ⊙ W_up x), exactly; W_gate, W_up (F, D), W_down (D, F)."""
    o = _Opts(**opts)
    X, Wg, Wu, Wd = (_exact(t, n) for t, n in ((x, "x"), (w_gate, "w_gate"), (w_up, "w_up"), (w_down, "w_down")))
    _check_swiglu_shapes(X, Wg, Wu, Wd)
    if not _all_finite(X, Wg, Wu, Wd):
        with np.errstate(all="ignore"):
            X64 = X.astype(np.float64)
            g, u = X64 @ Wg.T.astype(np.float64), X64 @ Wu.T.astype(np.float64)
            return _nonfinite("swiglu", (g / (1 + np.exp(-g)) * u) @ Wd.T.astype(np.float64))
    narrow = X.dtype == np.float32

    def fast(stats: _Stats, dl: _Deadline) -> DD:
        return _swiglu_dd(DD.of(X.astype(np.float64)), narrow, Wg, Wu, Wd, o, stats, dl)[0]

    def mp(m: _MP) -> tuple[np.ndarray, np.ndarray]:
        return m.swiglu(m.arr(X), m.arr(Wg), m.arr(Wu), m.arr(Wd))

    res, info = _evaluate("swiglu", fast, mp, _in_fast_range(X, Wg, Wu, Wd), o)
    return _golden("swiglu", res, info)


def attention(x: Any, wq: Any, wk: Any, wv: Any, wo: Any, config: Any, **opts: Any) -> Golden:
    """Golden causal GQA attention with rotate-half RoPE (positions 0..T−1, base config.rope_theta, scale 1/√K).

    x (B, T, D); wq (H·K, D), wk, wv (G·K, D), wo (D, H·K) in nn.Linear layout; head h reads kv head h // (H/G).
    """
    o = _Opts(**opts)
    X = _exact(x, "x")
    Ws = [_exact(t, n) for t, n in ((wq, "wq"), (wk, "wk"), (wv, "wv"), (wo, "wo"))]
    _check_attention_shapes(X, *Ws, config)
    if not _all_finite(X, *Ws):
        return _nonfinite("attention", np.full(X.shape, np.nan))
    narrow = X.dtype == np.float32

    def fast(stats: _Stats, dl: _Deadline) -> DD:
        return _attention_dd(DD.of(X.astype(np.float64)), narrow, *Ws, config, o, stats, dl)

    def mp(m: _MP) -> tuple[np.ndarray, np.ndarray]:
        return m.attention(m.arr(X), *(m.arr(W) for W in Ws), config)

    res, info = _evaluate("attention", fast, mp, _in_fast_range(X, *Ws), o)
    return _golden("attention", res, info)


BLOCK_PARAMS = (
    "attn_norm.weight",
    "attn.wq.weight",
    "attn.wk.weight",
    "attn.wv.weight",
    "attn.wo.weight",
    "ffn_norm.weight",
    "ffn.w_gate.weight",
    "ffn.w_up.weight",
    "ffn.w_down.weight",
)


def block(x: Any, params: Mapping[str, Any], config: Any, **opts: Any) -> Golden:
    """Golden pre-norm Block: h = x + attn(RMSNorm(x)), out = h + SwiGLU(RMSNorm(h)), exactly (no rounding between).

    params: the contract's state_dict names (``BLOCK_PARAMS``); config: ModelConfig (norm_eps, rope_theta,
    n_heads, n_kv_heads). x (B, T, D).
    """
    o = _Opts(**opts)
    missing = [k for k in BLOCK_PARAMS if k not in params]
    if missing:
        raise KeyError(f"golden.block: params lack {missing}; expected the state_dict names {list(BLOCK_PARAMS)}")
    X = _exact(x, "x")
    P = {k: _exact(params[k], k) for k in BLOCK_PARAMS}
    _check_attention_shapes(
        X, P["attn.wq.weight"], P["attn.wk.weight"], P["attn.wv.weight"], P["attn.wo.weight"], config
    )
    _check_swiglu_shapes(X, P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"])
    if not _all_finite(X, *P.values()):
        return _nonfinite("block", np.full(X.shape, np.nan))

    def fast(stats: _Stats, dl: _Deadline) -> DD:
        return _block_dd(X.astype(np.float64), P, config, o, stats, dl)

    def mp(m: _MP) -> tuple[np.ndarray, np.ndarray]:
        return m.block(m.arr(X), {k: m.arr(v) for k, v in P.items()}, config)

    res, info = _evaluate("block", fast, mp, _in_fast_range(X, *P.values()), o)
    return _golden("block", res, info)


# ------------------------------------------------------------------------------------------------ VJPs
def _outer_sum(a: DD, b: np.ndarray | DD, tol_bits: int, stats: _Stats) -> DD:
    """Σ_n a[n, p] · b[n, q] → DD (P, Q) (gradient of a linear layer's weight; rows n summed exactly)."""
    bd = b if isinstance(b, DD) else DD.of(b)
    A = a.reshape(-1, a.shape[-1])
    Bm = bd.reshape(-1, bd.shape[-1])
    Pn, Qn = A.hi.shape[1], Bm.hi.shape[1]
    out_hi, out_lo = np.empty((Pn, Qn)), np.empty((Pn, Qn))
    ch = max(1, _TERM_BUDGET // max(1, 4 * A.hi.shape[0] * Qn))
    for i in range(0, Pn, ch):
        ai = DD(A.hi[:, i : i + ch].T[:, None, :], A.lo[:, i : i + ch].T[:, None, :])  # (c, 1, N)
        bi = DD(Bm.hi.T[None], Bm.lo.T[None])  # (1, Q, N)
        s = _dot(ai, bi, -1, tol_bits, stats)
        out_hi[i : i + ch], out_lo[i : i + ch] = s.hi, s.lo
    return DD(out_hi, out_lo)


def rmsnorm_vjp(x: Any, weight: Any, eps: float, grad_out: Any, **opts: Any) -> tuple[Golden, Golden]:
    """Golden RMSNorm vector–Jacobian product for y = x·r·w, r = (Σx²/D + ε)^(-1/2), upstream gradient g:

    dx = r·(w ⊙ g) − (r³/D)·x·Σ_j(g_j w_j x_j),   dw = Σ_rows g ⊙ x · r.
    """
    o = _Opts(**opts)
    X, w, G, eps = _exact(x, "x"), _exact(weight, "weight"), _exact(grad_out, "grad_out"), _scalar(eps, "eps")
    _check_last(X, w, "rmsnorm_vjp", "weight")
    if G.shape != X.shape:
        raise ValueError(f"golden.rmsnorm_vjp: grad_out shape {G.shape} != x shape {X.shape}")
    D = X.shape[-1]
    if not (_all_finite(X, w, G) and _in_fast_range(X, w, G)):
        if not _all_finite(X, w, G):
            nan = np.full(X.shape, np.nan)
            return _nonfinite("rmsnorm_vjp.dx", nan), _nonfinite("rmsnorm_vjp.dw", np.full(w.shape, np.nan))
    dl = _Deadline("rmsnorm_vjp", o.timeout)
    stats = _Stats()
    x64, w64, g64 = X.astype(np.float64), w.astype(np.float64), G.astype(np.float64)
    _, r = _rmsnorm_dd(DD.of(x64), w, eps, o, stats)  # r (..., 1)
    gw = DD(*dd.two_prod(g64, w64))  # exact
    a_terms = []  # Σ_j g_j w_j x_j: (gw.hi + gw.lo)·x exactly as four TwoProd terms
    for part in (gw.hi, gw.lo):
        a_terms.extend(dd.two_prod(part, x64))
    a = _sum_terms(np.concatenate(a_terms, axis=-1), o.tol_bits, stats)
    r3 = dd.mul(dd.mul(r, r), r)
    coef = dd.div(dd.mul(r3, DD(a.hi[..., None], a.lo[..., None])), DD.of(np.full(r.shape, float(D))))
    dx = dd.sub(dd.mul(r, gw), dd.mul_d(coef, x64))
    gx = DD(*dd.two_prod(g64, x64))
    gxr = dd.mul(gx, r)
    flat = gxr.reshape(-1, D)
    dw = _sum_terms(np.concatenate([flat.hi.T, flat.lo.T], axis=-1), o.tol_bits, stats)
    dl.check()
    info = {
        "method": "fast",
        "sum_bound_rel": stats.sum_bound_rel,
        "kernel_checks": stats.kernel_checks,
        "validated": o.validate,
    }
    if o.validate == "full":
        ref_dx, ref_dw = _mp_rmsnorm_vjp(X, w, G, eps, o, dl)
        info["full_check_rel"] = max(
            _compare_mp("rmsnorm_vjp.dx", dx, ref_dx[0], ref_dx[1], o, "the fast path"),
            _compare_mp("rmsnorm_vjp.dw", dw, ref_dw[0], ref_dw[1], o, "the fast path"),
        )
    return _golden("rmsnorm_vjp.dx", dx, info), _golden("rmsnorm_vjp.dw", dw, info)


def _mp_rmsnorm_vjp(X: np.ndarray, w: np.ndarray, G: np.ndarray, eps: float, o: _Opts, dl: _Deadline):
    m = _MP(o.prec + 64, dl)
    ctx = m.ctx
    Xm, wm, Gm = m.arr(X).reshape(-1, X.shape[-1]), list(m.arr(w)), m.arr(G).reshape(-1, X.shape[-1])
    D = X.shape[-1]
    dx = np.empty(Xm.shape, dtype=object)
    sdx = np.empty(Xm.shape, dtype=object)
    dw = [ctx.mpf(0)] * D
    sdw = [ctx.mpf(0)] * D
    for i in range(Xm.shape[0]):
        dl.check()
        row, g = list(Xm[i]), list(Gm[i])
        r = 1 / ctx.sqrt(ctx.fdot(row, row) / D + eps)
        a = ctx.fdot([gj * wj for gj, wj in zip(g, wm, strict=True)], row)
        sa = ctx.fdot([abs(gj * wj) for gj, wj in zip(g, wm, strict=True)], [abs(v) for v in row])
        for j in range(D):
            dx[i, j] = r * wm[j] * g[j] - r**3 / D * row[j] * a
            sdx[i, j] = abs(r * wm[j] * g[j]) + r**3 / D * abs(row[j]) * sa
            dw[j] += g[j] * row[j] * r
            sdw[j] += abs(g[j] * row[j] * r)
    return (dx.reshape(X.shape), sdx.reshape(X.shape)), (np.array(dw, dtype=object), np.array(sdw, dtype=object))


def swiglu_vjp(
    x: Any, w_gate: Any, w_up: Any, w_down: Any, grad_out: Any, **opts: Any
) -> tuple[Golden, Golden, Golden, Golden]:
    """Golden SwiGLU vector–Jacobian product. With g = W_gate x, u = W_up x, s = silu(g), h = s ⊙ u, y = W_down h
    and upstream gradient γ: dh = W_downᵀ γ, dW_down = Σ_rows γ ⊗ h, du = dh ⊙ s,
    dg = dh ⊙ u ⊙ silu'(g) with silu'(z) = σ(z)(1 + z(1 − σ(z))), dx = W_gateᵀ dg + W_upᵀ du,
    dW_gate = Σ_rows dg ⊗ x, dW_up = Σ_rows du ⊗ x. Returns (dx, dW_gate, dW_up, dW_down).
    """
    o = _Opts(**opts)
    X, Wg, Wu, Wd = (_exact(t, n) for t, n in ((x, "x"), (w_gate, "w_gate"), (w_up, "w_up"), (w_down, "w_down")))
    Gy = _exact(grad_out, "grad_out")
    _check_swiglu_shapes(X, Wg, Wu, Wd)
    if Gy.shape != X.shape:
        raise ValueError(f"golden.swiglu_vjp: grad_out shape {Gy.shape} != x shape {X.shape}")
    if not _all_finite(X, Wg, Wu, Wd, Gy):
        nan = _nonfinite("swiglu_vjp", np.full(X.shape, np.nan))
        return (nan, *(_nonfinite("swiglu_vjp", np.full(W.shape, np.nan)) for W in (Wg, Wu, Wd)))
    dl = _Deadline("swiglu_vjp", o.timeout)
    stats = _Stats()
    narrow = X.dtype == np.float32
    x64 = X.astype(np.float64).reshape(-1, X.shape[-1])
    gy = Gy.astype(np.float64).reshape(-1, X.shape[-1])
    _, t = _swiglu_dd(DD.of(x64), narrow, Wg, Wu, Wd, o, stats, dl)
    g, u, s, sig, h = t["g"], t["u"], t["s"], t["sig"], t["h"]
    dh = _matvec(np.ascontiguousarray(Wd.T), DD.of(gy), Gy.dtype == np.float32, o.tol_bits, stats, dl)  # (N, F)
    dWd = _outer_sum(DD.of(gy), h, o.tol_bits, stats)  # (D, F)
    du = dd.mul(dh, s)
    one_minus = dd.add_d(dd.neg(sig), 1.0)
    dsilu = dd.mul(sig, dd.add_d(dd.mul(g, one_minus), 1.0))
    dg = dd.mul(dd.mul(dh, u), dsilu)
    dx = dd.add(
        _matvec(np.ascontiguousarray(Wg.T), dg, False, o.tol_bits, stats, dl),
        _matvec(np.ascontiguousarray(Wu.T), du, False, o.tol_bits, stats, dl),
    )
    dWg = _outer_sum(dg, x64, o.tol_bits, stats)
    dWu = _outer_sum(du, x64, o.tol_bits, stats)
    info = {
        "method": "fast",
        "sum_bound_rel": stats.sum_bound_rel,
        "kernel_checks": stats.kernel_checks,
        "validated": o.validate,
    }
    if o.validate == "full":
        refs = _mp_swiglu_vjp(X, Wg, Wu, Wd, Gy, o, dl)
        info["full_check_rel"] = max(
            _compare_mp(f"swiglu_vjp.{n}", got, ref[0], ref[1], o, "the fast path")
            for n, got, ref in zip(("dx", "dw_gate", "dw_up", "dw_down"), (dx, dWg, dWu, dWd), refs, strict=True)
        )
    dx = DD(dx.hi.reshape(X.shape), dx.lo.reshape(X.shape))
    return (
        _golden("swiglu_vjp.dx", dx, info),
        _golden("swiglu_vjp.dw_gate", dWg, info),
        _golden("swiglu_vjp.dw_up", dWu, info),
        _golden("swiglu_vjp.dw_down", dWd, info),
    )


def _mp_swiglu_vjp(X, Wg, Wu, Wd, Gy, o: _Opts, dl: _Deadline):
    m = _MP(o.prec + 64, dl)
    ctx = m.ctx
    Xm = m.arr(X).reshape(-1, X.shape[-1])
    Gm = m.arr(Gy).reshape(-1, X.shape[-1])
    Wgm, Wum, Wdm = m.arr(Wg), m.arr(Wu), m.arr(Wd)
    g, _ = m.linear(Wgm, Xm)
    u, _ = m.linear(Wum, Xm)
    sig = np.vectorize(lambda z: 1 / (1 + ctx.exp(-z)), otypes=[object])(g)
    s = g * sig
    h = s * u
    dh, _ = m.linear(np.ascontiguousarray(Wdm.T), Gm)
    du = dh * s
    dg = dh * u * sig * (1 + g * (1 - sig))
    dx, sdx1 = m.linear(np.ascontiguousarray(Wgm.T), dg)
    dx2, sdx2 = m.linear(np.ascontiguousarray(Wum.T), du)
    absf = np.vectorize(abs, otypes=[object])

    def outer(a, b):
        return a.T.dot(b), absf(a).T.dot(absf(b))

    return ((dx + dx2, sdx1 + sdx2), outer(dg, Xm), outer(du, Xm), outer(Gm, h))


# ------------------------------------------------------------------------------------------ checks
def _check_last(X: np.ndarray, w: np.ndarray, name: str, what: str) -> None:
    if X.ndim < 1 or w.shape != (X.shape[-1],):
        raise ValueError(f"golden.{name}: {what} shape {w.shape} does not match x's last dimension {X.shape}")


def _check_swiglu_shapes(X: np.ndarray, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray) -> None:
    D = X.shape[-1]
    F = Wg.shape[0]
    if Wg.shape != (F, D) or Wu.shape != (F, D) or Wd.shape != (D, F):
        raise ValueError(
            f"golden.swiglu: expected w_gate, w_up (F, D) and w_down (D, F) for D={D}; got "
            f"{Wg.shape}, {Wu.shape}, {Wd.shape}"
        )


def _check_attention_shapes(X, wq, wk, wv, wo, cfg) -> None:
    if X.ndim != 3:
        raise ValueError(f"golden.attention: x must be (B, T, D), got shape {X.shape}")
    D, H, G = X.shape[-1], cfg.n_heads, cfg.n_kv_heads
    K = D // H
    want = {"wq": (H * K, D), "wk": (G * K, D), "wv": (G * K, D), "wo": (D, H * K)}
    for (n, shape), W in zip(want.items(), (wq, wk, wv, wo), strict=True):
        if W.shape != shape:
            raise ValueError(f"golden.attention: {n} has shape {W.shape}, expected {shape} (D={D}, H={H}, G={G})")
