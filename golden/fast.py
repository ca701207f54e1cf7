"""The exact fast paths of the golden engine: double-double evaluation in numpy, certified sum by sum.

Each component (:func:`rmsnorm`, :func:`swiglu`, …) evaluates the definition of :mod:`golden.definitions` on the
exact inputs in double-double (DD) arithmetic (:mod:`golden.dd`), without rounding anything that matters:

* **Matrix–vector products** by the Ozaki–Ogita–Oishi error-free splitting: x and the rows of W are cut into
  slices narrow enough that float64 GEMM sums every slice product *exactly* in any order (BLAS does the heavy
  lifting and a weight matrix is read once). Otherwise products of ≤ fp32 values are exact in float64, float64
  (or DD) factors are split by Veltkamp/Dekker into exact partial products.
* **Reductions** by the Rump–Ogita–Oishi error-free extraction sum with a rigorous a posteriori bound, iterated
  until the bound is ≤ 2^-tol_bits of the sum; every bound is recorded in the evaluation's
  :class:`golden.framework.Stats` (``info["sum_bound_rel"]``).
* **Nonlinearities** as DD kernels (exp, √, division); exp and √ are recomputed with mpmath on a sample of their
  actual arguments on every call (:func:`golden.framework.check_kernel`).

Validity range (:func:`in_range`): finite inputs, float64 data with 2^-900 < |v| < 2^500 (or 0); the framework
uses the mpmath evaluator outside it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch

from golden import dd
from golden.dd import DD
from golden.framework import Deadline, Opts, Stats, check_kernel, context, pool_map

_TERM_BUDGET = 1 << 19  # float64 elements per chunk of a matrix–vector product (4 MiB: stays in cache)
_ATTENTION_BUDGET = 1 << 23  # float64 terms per chunk of query positions in attention (64 MiB)
UNSLICED_W = True  # float32 W on a narrow row grid enters the GEMM unsliced (``golden bench`` times both forms)


def in_range(*arrays: np.ndarray) -> bool:
    """The fast path's validity range: finite, and float64 data with 2^-900 < |v| < 2^500 or v = 0."""
    for a in arrays:
        if a.dtype == np.float32 or a.size == 0:
            continue
        with np.errstate(all="ignore"):
            m = np.abs(a)
            if not np.isfinite(m).all() or m.max() >= 2.0**500 or (m[m > 0].min(initial=1.0) <= 2.0**-900):
                return False
    return True


# ----------------------------------------------------------------------------------- DD building blocks
def _sum_terms(terms: np.ndarray, tol_bits: int, stats: Stats, overwrite: bool = False) -> DD:
    s, bound = dd.acc_sum(terms, tol_bits=tol_bits + 4, overwrite=overwrite)
    stats.record(s, bound)
    return s


def _prod_terms(a: DD, b: DD) -> list[np.ndarray]:
    """Terms summing to a·b up to ≤ u²·|a·b|: TwoProd(a.hi, b.hi) exactly, plus the cross terms."""
    p, e = dd.two_prod(a.hi, b.hi)
    return [p, e, a.hi * b.lo, a.lo * b.hi]


def _dot(a: DD, b: DD, axis: int, tol_bits: int, stats: Stats) -> DD:
    """Σ_axis a·b for broadcastable DD arrays (small shapes: attention scores and mixing)."""
    terms = _prod_terms(a, b)
    stacked = np.concatenate([np.moveaxis(t, axis, -1) for t in np.broadcast_arrays(*terms)], axis=-1)
    return _sum_terms(stacked, tol_bits, stats, overwrite=False)


def _gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ bᵀ in float64, by torch in the calling thread (single-threaded inside :func:`golden.framework.pool_map`).
    Exactness does not depend on the summation order (see :func:`_ozaki_bits`), so any GEMM is correct here."""
    return (torch.from_numpy(a) @ torch.from_numpy(b).T).numpy()


def _ozaki_bits(n: int, w_narrow: bool) -> tuple[int, int]:
    """(bits of an x slice, bits of a W slice) such that every partial sum of n slice products is exact.

    Slices on grids g_x, g_w hold integers below 2^b_x, 2^b_w (in units of g), so a product is an integer
    multiple of g_x·g_w below 2^(b_x + b_w) and a sum of n of them stays below 2^53 units iff
    b_x + b_w + ⌈log2 n⌉ ≤ 53: every partial sum, in any order and with or without FMA, is then exact.
    ≤ 24-bit weights get wide slices (b_w = 28: one slice covers a bf16/fp16 row of ≤ 20 binades, so the big
    matrix is read once) and x narrow ones; float64 weights split the budget evenly.
    """
    budget = _ozaki_budget(n)
    b_w = 28 if w_narrow else budget // 2
    return budget - b_w, b_w


def _ozaki_budget(n: int) -> int:
    """53 − ⌈log2 n⌉: the bits a slice product may have for n of them to sum exactly (:func:`_ozaki_bits`)."""
    return 53 - int(np.ceil(np.log2(max(n, 2))))


def _row_grid(W32: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row of a float32 matrix, (g, b, max|w|): every entry is an integer multiple of the power of two g
    and below 2^b·g in magnitude — read from the bit patterns, no arithmetic on the values.

    With p = 24 − (trailing zero bits common to every significand of the row), an entry of exponent e is a
    multiple of 2^(e − p + 1) (subnormals: e = −126) and below 2^(e+1); so with e_min, e_max the exponents of
    the smallest nonzero and the largest |entry|, g = 2^(e_min − p + 1) and b = e_max − e_min + p (b = 0 for a
    zero row). Five passes over 4-byte integers; a bf16 row of randn values gives b ≈ 22.
    """
    bits = W32.view(np.uint32)
    a = np.bitwise_and(bits, np.uint32(0x7FFFFFFF))  # |w| as bits: order-preserving for finite values
    top = a.max(axis=1).astype(np.int64)
    used = (np.bitwise_or.reduce(a, axis=1) & np.uint32(0x7FFFFF)).astype(np.int64)  # significand bits in use
    a -= np.uint32(1)  # 0 wraps to 2^32 − 1: the minimum below is the smallest nonzero |w| (minus one)
    low = a.min(axis=1).astype(np.int64) + 1
    tz = np.where(used == 0, 23, np.frexp((used & -used).astype(np.float64))[1] - 1)
    p = 24 - tz
    e_max = np.maximum(top >> 23, 1) - 127
    e_min = np.maximum(low >> 23, 1) - 127
    zero = top == 0
    g, b = np.where(zero, 1.0, np.ldexp(1.0, e_min - p + 1)), np.where(zero, 0, e_max - e_min + p)
    return g, b, top.astype(np.uint32).view(np.float32).astype(np.float64)


class _Slices(NamedTuple):
    """Σ_j slices[j] + rest = the sliced rows exactly (:func:`_slice_rows`)."""

    slices: list[np.ndarray]  # each on its per-row grid
    grids: list[np.ndarray]  # per-row grid of each slice
    row_max: np.ndarray  # max|row| before slicing (an upper bound for DD rows)
    rest_max: np.ndarray  # max|rest| per row (0: sliced exactly)
    rest_hi: np.ndarray  # rest = rest_hi + rest_lo, |rest_lo| ≤ u·|rest_hi| elementwise
    rest_lo_max: np.ndarray


def _slice_rows(
    hi: np.ndarray, lo: np.ndarray | None, bits: int, max_slices: int, rel_stop: float = 0.0, copy: bool = True
) -> _Slices | None:
    """Error-free slicing of the rows of hi (+ lo): Σ_j S_j + R = hi + lo exactly, S_j on the per-row grid
    2^-53·σ_j holding integers below 2^bits (extraction q = fl((σ + r) − σ), σ = 2^(54−bits)·nextpow2(max|r|);
    a DD remainder is renormalised by TwoSum, also exact). Slicing stops when the remainder R is zero or, with
    ``rel_stop`` > 0, when max|R_i| ≤ rel_stop·max|row_i|; None after ``max_slices`` slices without stopping.
    """
    shift = 54 - bits
    r_hi = np.array(hi, dtype=np.float64, copy=copy)
    r_lo = None if lo is None or not np.any(lo) else np.array(lo, dtype=np.float64, copy=True)
    slices, grids = [], []
    mu0 = None
    for _ in range(max_slices + 1):
        if r_lo is not None:
            r_hi, r_lo = dd.two_sum(r_hi, r_lo)
            lo_max = np.max(np.abs(r_lo), axis=1)
            mu = np.max(np.abs(r_hi), axis=1) * (1 + 2.0**-50) + lo_max
        else:  # max|r| without an |r| temporary
            lo_max = np.zeros(r_hi.shape[0])
            mu = np.maximum(r_hi.max(axis=1), -r_hi.min(axis=1))
        if mu0 is None:
            mu0 = mu
        elif not np.any(mu > rel_stop * mu0):
            return _Slices(slices, grids, mu0, mu, r_hi, lo_max)
        if len(slices) == max_slices:
            return None
        sigma = np.ldexp(dd._nextpow2(mu), shift)[:, None]
        q = r_hi + sigma
        q -= sigma
        r_hi -= q
        slices.append(q)
        grids.append(np.ldexp(sigma[:, 0], -53))
    return None  # not reached


class _XSlices(NamedTuple):
    """x cut into slices of ≤ b_x bits (:func:`_slice_rows`) and its remainder, stacked for one GEMM."""

    stacked: np.ndarray  # (k·N, n): slice a of row r at a·N + r; the remainder's hi part last when there is one
    count: int  # k: the slices, and the remainder if any
    grid_min: float  # smallest and largest nonzero slice grid (for the under/overflow guard)
    grid_max: float
    rest: np.ndarray | None  # per row, max|remainder|·γ_n + max|remainder lo part| (None: sliced exactly)


def _x_slices(X: DD, b_x: int, n: int, stop_bits: int | None) -> _XSlices | None:
    """x sliced to ``b_x`` bits, down to max|R_i| ≤ 2^-stop_bits·max|x_i| (``None``: exactly, R = 0)."""
    max_slices = 48 if stop_bits is None else 3 + stop_bits // (b_x - 1)  # a slice takes ≥ b_x − 1 bits
    xs = _slice_rows(X.hi, X.lo, b_x, max_slices, 0.0 if stop_bits is None else 2.0**-stop_bits)
    if xs is None or not xs.slices:
        return None
    g = np.concatenate([g[g > 0] for g in xs.grids] + [np.ones(1)])
    if not xs.rest_max.any():
        return _XSlices(np.concatenate(xs.slices), len(xs.slices), g.min(), g.max(), None)
    gamma = n * dd.U / (1 - n * dd.U) * (1 + 2.0**-40)  # Higham's γ_n, rounded up
    rest = np.max(np.abs(xs.rest_hi), axis=1) * gamma + xs.rest_lo_max
    return _XSlices(np.concatenate([*xs.slices, xs.rest_hi]), len(xs.slices) + 1, g.min(), g.max(), rest)


def _matvec_ozaki(
    W: np.ndarray, X: DD, tol_bits: int, dl: Deadline, exact_x: bool = False
) -> tuple[DD, np.ndarray] | None:
    """W x by the Ozaki–Ogita–Oishi error-free splitting: x = Σ_a X_a + R, W = Σ_b W_b, every X_a W_bᵀ computed
    *exactly* by float64 GEMM, and the partial results of each output summed by :func:`golden.dd.acc_sum`. W is
    processed in cache-sized row chunks (read once), in parallel. Returns (W x, error bound), or None when not
    applicable (then the per-product path is used).

    * The x remainder R (max|R_i| ≤ 2^-(tol+32)·max|x_i|/γ_n, or R = 0 with ``exact_x``) enters the same GEMM as one
      more slice: its products are rounded, by at most γ_n·max|R_i|·‖W_m‖₁ (‖W_m‖₁ ≤ n·max|W_m|), in the bound.
    * W is not sliced at all (one slice: itself) when it is float32 and a row chunk lies on row grids of
      b_w ≤ budget − 8 bits (:func:`_row_grid`); x is then sliced to b_x = budget − b_w bits. With few rows of x
      b_w is that bound (one x slicing, no pass over W ahead); with many, the widest row grid within it (one pass
      ahead over W, fewer x slices in every GEMM). Other chunks are sliced as :func:`_ozaki_bits` says.
    """
    M, n = W.shape
    N = X.hi.shape[0]
    budget = _ozaki_budget(n)
    b_x_sliced, b_w_sliced = _ozaki_bits(n, W.dtype == np.float32)
    stop_bits = None if exact_x else max(1, tol_bits + 32 + int(np.ceil(np.log2(max(n, 2)))) - 52)
    ch = max(1, min(M, (1 << 18) // max(1, n)))  # rows per product: 2 MiB of float64 W stays in cache
    starts = list(range(0, M, ch))
    unsliced = W.dtype == np.float32 and UNSLICED_W
    b_w_direct = budget - 8
    if unsliced and N >= 16:
        grids = pool_map(lambda i: _row_grid(W[i : i + ch])[1].max(), starts, M * n // 8)
        fits = [int(b) for b in grids if b <= b_w_direct]
        b_w_direct = max(fits, default=b_w_direct)
    lock = threading.Lock()
    cache: dict[int, _XSlices | None] = {}

    def x_slices(b_x: int) -> _XSlices | None:
        with lock:
            if b_x not in cache:
                cache[b_x] = _x_slices(X, b_x, n, stop_bits)
            return cache[b_x]

    def product(i: int, c: int) -> tuple[np.ndarray, np.ndarray | None] | None:
        """Rows i..i+c−1 of W: (the partial results (N, c, k), the bound on the remainder's part or None)."""
        Wc = W[i : i + c].astype(np.float64)
        xs = None
        if unsliced:
            gw, bw, w_max = _row_grid(W[i : i + c])
            if bw.max() <= b_w_direct:
                xs = x_slices(budget - b_w_direct)
                w_slices, gw_min, gw_max = Wc, gw.min(), gw.max()
        if xs is None:
            xs = x_slices(b_x_sliced)
            ws = None if xs is None else _slice_rows(Wc, None, b_w_sliced, 8, copy=False)
            if ws is None:
                return None
            gw = np.concatenate([g[g > 0] for g in ws.grids] + [np.ones(1)])
            w_slices = np.concatenate(ws.slices) if len(ws.slices) > 1 else ws.slices[0]
            gw_min, gw_max, w_max = gw.min(), gw.max(), ws.row_max
        if xs.grid_min * gw_min < 2.0**-1000 or xs.grid_max * gw_max > 2.0**900 / (n * 2.0**110):  # products normal
            return None
        sw = w_slices.shape[0] // c
        prod = _gemm(xs.stacked, w_slices)  # (k·N, s_w·c): exact slice-product sums, the remainder's rounded
        parts = prod.reshape(xs.count, N, sw, c).transpose(1, 3, 0, 2).reshape(N, c, xs.count * sw)
        if xs.rest is None:
            return parts, None
        w_l1 = w_max * (n * (1 + 2.0**-40))  # ≥ ‖W_m‖₁
        return parts, xs.rest[:, None] * w_l1[None, :] + n * 2.0**-1074  # (+ products that underflow)

    out_hi, out_lo, out_b = np.empty((N, M)), np.empty((N, M)), np.empty((N, M))
    per_task = max(1, min((1 << 16) // max(1, N * ch), -(-len(starts) // 4)))  # sums batched, ≥ 4 tasks
    failed: list[bool] = []

    def run(start: int) -> None:
        dl.check()
        groups: dict[int, list[tuple[int, np.ndarray, np.ndarray | None]]] = {}
        for i in range(start, min(M, start + ch * per_task), ch):
            res = product(i, min(ch, M - i))
            if res is None:
                failed.append(True)
                return
            groups.setdefault(res[0].shape[-1], []).append((i, *res))
        for items in groups.values():  # one certified summation per number of partial results
            s, bound = dd.acc_sum(np.concatenate([p for _, p, _ in items], axis=1), tol_bits=tol_bits + 4)
            j = 0
            for i, p, extra in items:
                src, dst = slice(j, j + p.shape[1]), slice(i, i + p.shape[1])
                out_hi[:, dst], out_lo[:, dst] = s.hi[:, src], s.lo[:, src]
                out_b[:, dst] = bound[:, src] if extra is None else bound[:, src] + extra
                j += p.shape[1]

    pool_map(run, starts[::per_task], M * n)
    if failed:
        return None
    return DD(out_hi, out_lo), out_b


def _matvec(W: np.ndarray, x: DD, x_narrow: bool, tol_bits: int, stats: Stats, dl: Deadline) -> DD:
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
        res = _matvec_ozaki(W, X, tol_bits, dl)
        redo = np.flatnonzero(np.any(res[1] > np.ldexp(np.abs(res[0].hi), -(tol_bits + 2)), axis=0)) if res else []
        if len(redo):  # cancellation in these outputs: recompute them with x sliced completely (no remainder)
            fix = _matvec_ozaki(np.ascontiguousarray(W[redo]), X, tol_bits, dl, exact_x=True)
            if fix is None:
                res = None
            else:
                res[0].hi[:, redo], res[0].lo[:, redo], res[1][:, redo] = fix[0].hi, fix[0].lo, fix[1]
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

    pool_map(run, starts, N * M * n * k)
    return DD(out_hi.reshape(*lead, M), out_lo.reshape(*lead, M))


def _outer_sum(a: DD, b: np.ndarray | DD, tol_bits: int, stats: Stats) -> DD:
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


# ----------------------------------------------------------------------------------------- DD maths
def _rsqrt_dd(v: DD, opts: Opts, stats: Stats) -> DD:
    root = dd.sqrt(v)
    check_kernel("sqrt", v, root, lambda ctx, a: ctx.sqrt(a), opts, stats)
    return dd.div(DD.of(np.ones_like(v.hi)), root)


def _exp_dd(a: DD, opts: Opts, stats: Stats) -> DD:
    out = dd.exp(a)
    check_kernel("exp", a, out, lambda ctx, z: ctx.exp(z), opts, stats)
    return out


def _square_sum(x: DD, tol_bits: int, stats: Stats) -> DD:
    """Σ x² along the last axis: TwoProd(hi, hi) + 2·hi·lo (+ lo², negligible) per element, summed exactly."""
    p, e = dd.two_prod(x.hi, x.hi)
    parts = [p, e] if not np.any(x.lo) else [p, e, 2.0 * x.hi * x.lo]
    return _sum_terms(np.concatenate(parts, axis=-1), tol_bits, stats)


def _rmsnorm_dd(x: DD, w: np.ndarray, eps: float, opts: Opts, stats: Stats) -> tuple[DD, DD]:
    """y = x · r · w with r = (Σx²/D + ε)^(-1/2); returns (y, r) with r of shape (..., 1)."""
    D = x.shape[-1]
    ms = dd.div(_square_sum(x, opts.tol_bits, stats), DD.of(np.full(x.shape[:-1], float(D))))
    r = _rsqrt_dd(dd.add_d(ms, eps), opts, stats)
    r = DD(r.hi[..., None], r.lo[..., None])
    return dd.mul_d(dd.mul(x, r), w.astype(np.float64)), r


def _silu_dd(z: DD, opts: Opts, stats: Stats) -> tuple[DD, DD]:
    """silu(z) = z·σ(z), σ(z) = 1/(1 + e^(−z)) for z ≥ 0 and e^z/(1 + e^z) for z < 0 (no overflow). → (silu, σ)."""
    neg_abs = DD(-np.abs(z.hi), np.where(z.hi >= 0, -z.lo, z.lo))
    e = _exp_dd(neg_abs, opts, stats)  # e^(−|z|) ∈ (0, 1]
    one = np.ones_like(z.hi)
    num = DD(np.where(z.hi >= 0, one, e.hi), np.where(z.hi >= 0, 0.0, e.lo))
    sig = dd.div(num, dd.add_d(e, 1.0))
    return dd.mul(z, sig), sig


def _swiglu_dd(
    x: DD, x_narrow: bool, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray, opts: Opts, stats: Stats, dl: Deadline
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
    ctx = context(200)
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
    ctx = context(200)
    v = 1 / ctx.sqrt(K)
    hi = float(v)
    return hi, float(v - hi)


def _rotate_half(a: DD) -> DD:
    K = a.hi.shape[-1]
    return DD(
        np.concatenate([-a.hi[..., K // 2 :], a.hi[..., : K // 2]], -1),
        np.concatenate([-a.lo[..., K // 2 :], a.lo[..., : K // 2]], -1),
    )


def _attend(q: DD, pos: np.ndarray, kt: DD, vt: DD, K: int, opts: Opts, stats: Stats) -> DD:
    """Causal softmax attention of queries q (n, H, K) at positions ``pos`` (n,) over the keys and values kt, vt
    (H, S, K) at positions 0..S−1: Σ_{s ≤ pos} softmax_s(q·k_s/√K) v_s → DD (n, H, K)."""
    tol = opts.tol_bits
    S = kt.hi.shape[1]
    ih, il = _inv_sqrt(K)
    # scores[h, i, s] = Σ_j q[i, h, j] k[h, s, j] / √K
    qa = DD(q.hi.transpose(1, 0, 2)[:, :, None, :], q.lo.transpose(1, 0, 2)[:, :, None, :])
    ka = DD(kt.hi[:, None], kt.lo[:, None])
    scores = _dot(qa, ka, -1, tol, stats)  # (H, n, S)
    scores = dd.mul(scores, DD(np.full(scores.shape, ih), np.full(scores.shape, il)))
    causal = pos[:, None] >= np.arange(S)[None, :]
    m = np.where(causal, scores.hi, -np.inf).max(axis=-1, keepdims=True)
    e = _exp_dd(dd.add_d(scores, -np.broadcast_to(m, scores.shape)), opts, stats)
    e = DD(np.where(causal, e.hi, 0.0), np.where(causal, e.lo, 0.0))
    Z = _sum_terms(np.concatenate([e.hi, e.lo], axis=-1), tol, stats)  # (H, n)
    p = dd.div(e, DD(Z.hi[..., None], Z.lo[..., None]))
    # out[h, i, j] = Σ_s p[h, i, s] v[h, s, j]
    out = _dot(DD(p.hi[..., None], p.lo[..., None]), DD(vt.hi[:, None], vt.lo[:, None]), 2, tol, stats)
    return DD(out.hi.transpose(1, 0, 2), out.lo.transpose(1, 0, 2))


def _attention_dd(
    x: DD,
    x_narrow: bool,
    wq: np.ndarray,
    wk: np.ndarray,
    wv: np.ndarray,
    wo: np.ndarray,
    cfg: Any,
    opts: Opts,
    stats: Stats,
    dl: Deadline,
    rows: np.ndarray | None = None,
) -> DD:
    """Attention of x (B, T, D) → (B, T, D); with ``rows`` (indices into the B·T positions, row-major), the outputs
    at those positions only → (len(rows), D): keys and values for every position, queries only where asked."""
    B, T, D = x.shape
    H, G = cfg.n_heads, cfg.n_kv_heads
    K = D // H
    tol = opts.tol_bits
    flat = x.reshape(B * T, D)
    sel = np.arange(B * T) if rows is None else rows
    q = _matvec(wq, flat if rows is None else flat[sel], x_narrow, tol, stats, dl).reshape(-1, H, K)
    k = _matvec(wk, x, x_narrow, tol, stats, dl).reshape(B, T, G, K)
    v = _matvec(wv, x, x_narrow, tol, stats, dl).reshape(B, T, G, K)
    cos, sin = _rope_tables(T, K, float(cfg.rope_theta))
    pos = sel % T
    qc, qs = DD(cos.hi[pos, None], cos.lo[pos, None]), DD(sin.hi[pos, None], sin.lo[pos, None])  # (n, 1, K)
    q = dd.add(dd.mul(q, qc), dd.mul(_rotate_half(q), qs))
    cos, sin = cos.reshape(1, T, 1, K), sin.reshape(1, T, 1, K)
    k = dd.add(dd.mul(k, cos), dd.mul(_rotate_half(k), sin))
    rep = H // G
    kh = DD(np.repeat(k.hi, rep, axis=2), np.repeat(k.lo, rep, axis=2))  # (B, T, H, K): head h reads h // rep
    vh = DD(np.repeat(v.hi, rep, axis=2), np.repeat(v.lo, rep, axis=2))
    kt, vt = (DD(a.hi.transpose(0, 2, 1, 3), a.lo.transpose(0, 2, 1, 3)) for a in (kh, vh))  # (B, H, T, K)
    heads_hi, heads_lo = np.empty((len(sel), H, K)), np.empty((len(sel), H, K))
    per_chunk = max(1, _ATTENTION_BUDGET // max(1, 4 * H * T * K))  # query positions per chunk (long sequences)
    for b in range(B):
        mine = np.flatnonzero(sel // T == b)
        for c0 in range(0, len(mine), per_chunk):
            dl.check()
            i = mine[c0 : c0 + per_chunk]
            S = int(pos[i].max()) + 1  # these queries see keys 0..S−1
            out = _attend(q[i], pos[i], kt[b][:, :S], vt[b][:, :S], K, opts, stats)
            heads_hi[i], heads_lo[i] = out.hi, out.lo
    y = _matvec(wo, DD(heads_hi.reshape(-1, H * K), heads_lo.reshape(-1, H * K)), False, tol, stats, dl)
    return y.reshape(B, T, D) if rows is None else y


def _block_dd(
    x: np.ndarray,
    P: Mapping[str, np.ndarray],
    cfg: Any,
    opts: Opts,
    stats: Stats,
    dl: Deadline,
    rows: np.ndarray | None = None,
) -> DD:
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
        rows,
    )
    h = dd.add_d(att, (x if rows is None else x.reshape(-1, x.shape[-1])[rows]).astype(np.float64))
    b, _ = _rmsnorm_dd(h, P["ffn_norm.weight"], cfg.norm_eps, opts, stats)
    f, _ = _swiglu_dd(b, False, P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"], opts, stats, dl)
    return dd.add(h, f)


# ------------------------------------------------------------------------------------------- components
def rmsnorm(X: np.ndarray, w: np.ndarray, eps: float, opts: Opts, stats: Stats, dl: Deadline) -> DD:
    xd = DD.of(X.astype(np.float64))
    if X.dtype != np.float32:
        return _rmsnorm_dd(xd, w, eps, opts, stats)[0]
    ss = _sum_terms(xd.hi * xd.hi, opts.tol_bits, stats, overwrite=True)  # x² is exact in float64: one term each
    ms = dd.div(ss, DD.of(np.full(X.shape[:-1], float(X.shape[-1]))))
    r = _rsqrt_dd(dd.add_d(ms, eps), opts, stats)
    r = DD(r.hi[..., None], r.lo[..., None])
    return dd.mul_d(dd.mul_d(r, xd.hi), w.astype(np.float64))


def layernorm(X: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float, opts: Opts, stats: Stats, dl: Deadline) -> DD:
    x64 = X.astype(np.float64)
    D = X.shape[-1]
    mu = dd.div(_sum_terms(x64, opts.tol_bits, stats), DD.of(np.full(X.shape[:-1], float(D))))
    c = dd.add_d(DD(-mu.hi[..., None] + 0 * x64, -mu.lo[..., None] + 0 * x64), x64)  # x − μ
    var = dd.div(_square_sum(c, opts.tol_bits, stats), DD.of(np.full(X.shape[:-1], float(D))))
    r = _rsqrt_dd(dd.add_d(var, eps), opts, stats)
    y = dd.mul_d(dd.mul(c, DD(r.hi[..., None], r.lo[..., None])), w.astype(np.float64))
    return dd.add_d(y, b.astype(np.float64))


def silu(Z: np.ndarray, opts: Opts, stats: Stats, dl: Deadline) -> DD:
    return _silu_dd(DD.of(Z.astype(np.float64)), opts, stats)[0]


def swiglu(X: np.ndarray, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray, opts: Opts, stats: Stats, dl: Deadline) -> DD:
    return _swiglu_dd(DD.of(X.astype(np.float64)), X.dtype == np.float32, Wg, Wu, Wd, opts, stats, dl)[0]


def attention(
    X: np.ndarray,
    Ws: tuple[np.ndarray, ...],
    cfg: Any,
    opts: Opts,
    stats: Stats,
    dl: Deadline,
    rows: np.ndarray | None = None,
) -> DD:
    return _attention_dd(DD.of(X.astype(np.float64)), X.dtype == np.float32, *Ws, cfg, opts, stats, dl, rows)


def block(
    X: np.ndarray,
    P: Mapping[str, np.ndarray],
    cfg: Any,
    opts: Opts,
    stats: Stats,
    dl: Deadline,
    rows: np.ndarray | None = None,
) -> DD:
    return _block_dd(X.astype(np.float64), P, cfg, opts, stats, dl, rows)


def rmsnorm_vjp(
    X: np.ndarray, w: np.ndarray, eps: float, G: np.ndarray, opts: Opts, stats: Stats, dl: Deadline
) -> tuple[DD, DD]:
    """dx = r·(w ⊙ g) − (r³/D)·x·Σ_j(g_j w_j x_j), dw = Σ_rows g ⊙ x · r, every product exact, every sum certified."""
    D = X.shape[-1]
    x64, w64, g64 = X.astype(np.float64), w.astype(np.float64), G.astype(np.float64)
    _, r = _rmsnorm_dd(DD.of(x64), w, eps, opts, stats)  # r (..., 1)
    gw = DD(*dd.two_prod(g64, w64))  # exact
    a_terms = []  # Σ_j g_j w_j x_j: (gw.hi + gw.lo)·x exactly as four TwoProd terms
    for part in (gw.hi, gw.lo):
        a_terms.extend(dd.two_prod(part, x64))
    a = _sum_terms(np.concatenate(a_terms, axis=-1), opts.tol_bits, stats)
    r3 = dd.mul(dd.mul(r, r), r)
    coef = dd.div(dd.mul(r3, DD(a.hi[..., None], a.lo[..., None])), DD.of(np.full(r.shape, float(D))))
    dx = dd.sub(dd.mul(r, gw), dd.mul_d(coef, x64))
    gxr = dd.mul(DD(*dd.two_prod(g64, x64)), r)
    flat = gxr.reshape(-1, D)
    dw = _sum_terms(np.concatenate([flat.hi.T, flat.lo.T], axis=-1), opts.tol_bits, stats)
    dl.check()
    return dx, dw


def swiglu_vjp(
    X: np.ndarray,
    Wg: np.ndarray,
    Wu: np.ndarray,
    Wd: np.ndarray,
    Gy: np.ndarray,
    opts: Opts,
    stats: Stats,
    dl: Deadline,
) -> tuple[DD, DD, DD, DD]:
    """(dx, dW_gate, dW_up, dW_down) for rows X (N, D), as :func:`golden.definitions.swiglu_vjp` states."""
    tol = opts.tol_bits
    x64, gy = X.astype(np.float64), Gy.astype(np.float64)
    _, t = _swiglu_dd(DD.of(x64), X.dtype == np.float32, Wg, Wu, Wd, opts, stats, dl)
    g, u, s, sig, h = t["g"], t["u"], t["s"], t["sig"], t["h"]
    dh = _matvec(np.ascontiguousarray(Wd.T), DD.of(gy), Gy.dtype == np.float32, tol, stats, dl)  # (N, F)
    dWd = _outer_sum(DD.of(gy), h, tol, stats)  # (D, F)
    du = dd.mul(dh, s)
    dsilu = dd.mul(sig, dd.add_d(dd.mul(g, dd.add_d(dd.neg(sig), 1.0)), 1.0))
    dg = dd.mul(dd.mul(dh, u), dsilu)
    dx = dd.add(
        _matvec(np.ascontiguousarray(Wg.T), dg, False, tol, stats, dl),
        _matvec(np.ascontiguousarray(Wu.T), du, False, tol, stats, dl),
    )
    return dx, _outer_sum(dg, x64, tol, stats), _outer_sum(du, x64, tol, stats), dWd


# ------------------------------------------------------------------------------------------ AddRMSNorm
def _exact_sum(X: np.ndarray, R: np.ndarray) -> DD:
    """h = x + r exactly: TwoSum of the float64 values (error-free for finite values without overflow)."""
    return DD(*dd.two_sum(X.astype(np.float64), R.astype(np.float64)))


def add_rmsnorm(X: np.ndarray, R: np.ndarray, w: np.ndarray, eps: float, opts: Opts, stats: Stats, dl: Deadline):
    """(y, h): h = x + r exactly (a DD), y = RMSNorm of that exact sum (:func:`_rmsnorm_dd` reads both parts)."""
    h = _exact_sum(X, R)
    return _rmsnorm_dd(h, w, eps, opts, stats)[0], h


def add_rmsnorm_vjp(
    X: np.ndarray,
    R: np.ndarray,
    w: np.ndarray,
    eps: float,
    Gy: np.ndarray,
    Gh: np.ndarray,
    opts: Opts,
    stats: Stats,
    dl: Deadline,
) -> tuple[DD, DD]:
    """(d, dw) as :func:`golden.definitions.add_rmsnorm_vjp` states: :func:`rmsnorm_vjp` at the exact sum h, a DD
    (each product with h taken exactly in its two parts), plus g_h."""
    D = X.shape[-1]
    h = _exact_sum(X, R)
    w64, g64 = w.astype(np.float64), Gy.astype(np.float64)
    _, r = _rmsnorm_dd(h, w, eps, opts, stats)  # r (..., 1)
    gw = DD(*dd.two_prod(g64, w64))  # exact
    a_terms = [t for a in (gw.hi, gw.lo) for b in (h.hi, h.lo) for t in dd.two_prod(a, b)]  # Σ_j g_j w_j h_j
    a = _sum_terms(np.concatenate(a_terms, axis=-1), opts.tol_bits, stats)
    r3 = dd.mul(dd.mul(r, r), r)
    coef = dd.div(dd.mul(r3, DD(a.hi[..., None], a.lo[..., None])), DD.of(np.full(r.shape, float(D))))
    d = dd.add_d(dd.sub(dd.mul(r, gw), dd.mul(coef, h)), Gh.astype(np.float64))
    gh = dd.add(DD(*dd.two_prod(g64, h.hi)), DD(*dd.two_prod(g64, h.lo)))  # g ⊙ h
    flat = dd.mul(gh, r).reshape(-1, D)
    dw = _sum_terms(np.concatenate([flat.hi.T, flat.lo.T], axis=-1), opts.tol_bits, stats)
    dl.check()
    return d, dw
