"""``nanolm-verify golden bench``: one golden SwiGLU row at Llama-7B shape, against the previous method, naive
mpmath and numpy.

Timings of y = W_d(silu(W_g x) ⊙ W_u x) for one bf16 row x (D) and bf16 weights (F × D, D × F):
* the golden engine (fast double-double path, self-validation on: certified sums + mpmath kernel checks), best
  and median of ``repeat`` calls;
* the previous method in the same run, interleaved call by call so both see the same load: the same engine with
  every weight row sliced for the Ozaki products (``golden.fast.UNSLICED_W`` off), as before the row-grid form;
* naive mpmath at the engine's precision, *measured* on a slice of S hidden units (their gate/up dot products,
  silu, product and their contribution to all D outputs, floats converted to mpf included) and extrapolated
  linearly to F (the cost is exactly linear in F);
* numpy float64 (three BLAS matrix–vector products on pre-converted float64 weights).

The load average is printed first: on a shared machine, compare ratios, not seconds.
"""

from __future__ import annotations

import os
import statistics
import time

import mpmath
import numpy as np
import torch

import golden
from golden import engine, fast


def _naive_slice(x: np.ndarray, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray, S: int, prec: int) -> float:
    """Seconds for naive mpmath on hidden units 0..S−1 (full contribution to every output)."""
    ctx = mpmath.MPContext()
    ctx.prec = prec
    t0 = time.perf_counter()
    xm = [ctx.mpf(v) for v in x.tolist()]
    acc = [ctx.mpf(0)] * wd.shape[0]
    for f in range(S):
        g = ctx.fdot([ctx.mpf(v) for v in wg[f].tolist()], xm)
        u = ctx.fdot([ctx.mpf(v) for v in wu[f].tolist()], xm)
        h = g / (1 + ctx.exp(-g)) * u
        col = wd[:, f].tolist()
        acc = [a + ctx.mpf(c) * h for a, c in zip(acc, col, strict=True)]
    return time.perf_counter() - t0


def _timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    res = fn()
    return time.perf_counter() - t0, res


def _previous(call):
    """``call()`` with the previous method: every weight row sliced."""
    fast.UNSLICED_W = False
    try:
        return call()
    finally:
        fast.UNSLICED_W = True


def run(D: int = 4096, F: int = 11008, S: int = 48, seed: int = 0, repeat: int = 5) -> int:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, D, generator=g).to(torch.bfloat16)
    wg = (torch.randn(F, D, generator=g) / D**0.5).to(torch.bfloat16)
    wu = (torch.randn(F, D, generator=g) / D**0.5).to(torch.bfloat16)
    wd = (torch.randn(D, F, generator=g) / F**0.5).to(torch.bfloat16)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"golden-bench: inputs bf16, x (1, {D}), W_gate/W_up ({F}, {D}), W_down ({D}, {F}); load average "
        f"{load} (1/5/15 min) on {os.cpu_count()} CPUs"
    )

    def call():
        return golden.swiglu(x, wg, wu, wd)

    first, res = _timed(call)  # also pays one-time costs (thread pool, BLAS, page faults): reported apart
    new, old = [], []
    for _ in range(repeat):  # interleaved: both methods see the same load
        new.append(_timed(call)[0])
        t, prev = _timed(lambda: _previous(call))
        old.append(t)
    same = bool(np.all(np.abs((prev.hi - res.hi) + (prev.lo - res.lo)) <= 2.0**-100 * np.abs(res.hi)))
    t_fast, t_prev = min(new), min(old)
    print(
        f"golden-bench: golden engine (fast DD path, {res.info['kernel_checks']} mpmath kernel checks, worst "
        f"certified sum bound {res.info['sum_bound_rel']:.2g}): best of {repeat} {t_fast:.2f} s, median "
        f"{statistics.median(new):.2f} s (first call {first:.2f} s; all {', '.join(f'{t:.2f}' for t in new)})"
    )
    print(
        f"golden-bench: previous method (every weight row sliced): best of {repeat} {t_prev:.2f} s, median "
        f"{statistics.median(old):.2f} s; ratio {t_prev / t_fast:.1f}; results agree to 2^-100: {same}"
    )

    xs, wgs, wus, wds = (t.float().numpy() for t in (x[0], wg, wu, wd))
    S = max(1, min(S, F))
    t_slice = _naive_slice(xs, wgs, wus, wds, S, engine.DEFAULT_PREC)
    t_naive = t_slice * F / S
    print(
        f"golden-bench: naive mpmath at {engine.DEFAULT_PREC} bits: {t_slice:.2f} s for {S} of {F} hidden units "
        f"→ ~{t_naive:.0f} s extrapolated"
    )

    x64, wg64, wu64, wd64 = (a.astype(np.float64) for a in (xs, wgs, wus, wds))
    t0 = time.perf_counter()
    gg = wg64 @ x64
    uu = wu64 @ x64
    y64 = wd64 @ (gg / (1 + np.exp(-gg)) * uu)
    t_np = time.perf_counter() - t0
    err = float(np.max(np.abs(y64 - res.float64()[0]) / np.maximum(np.abs(res.float64()[0]), 1e-300)))
    print(f"golden-bench: numpy float64: {t_np:.3f} s (max relative error vs golden {err:.2g})")
    print(
        f"golden-bench: swiglu D={D} F={F}: {t_fast:.2f} s; previous method {t_prev:.2f} s, ratio "
        f"{t_prev / t_fast:.1f}; naive mpmath ~ {t_naive:.0f} s; ratio {t_naive / t_fast:.0f}; numpy fp64 {t_np:.2f} s"
    )
    return 0 if same else 1
