"""RMSNorm's bounds: the forward (:func:`rmsnorm`), its invariants (norm, scale invariance, γ scaling, row sum,
bf16/fp32 drift) and its VJP (:func:`rmsnorm_vjp`); ``_rmsnorm_e`` is the norm's propagation, used by every
component with a norm.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from golden.formats import fmt
from properties.numerics import sites
from properties.numerics.bounds.arithmetic import (
    _P,
    ORDERS,
    U64,
    _shadows,
    reduction_roundings,
    sum_of_squares_limit,
)
from properties.numerics.bounds.bound import Bound, _either, between
from properties.numerics.bounds.propagation import (
    _E,
    _add,
    _contract,
    _eps_dtype,
    _finish,
    _gain_error,
    _given,
    _mul,
    _op,
    _r_interval,
    _row_overflow,
    _to_t,
)
from properties.numerics.ulp import as_f64 as _exact  # the one tensor → float64 conversion


def _rmsnorm_e(x: _E, w: np.ndarray, eps: float, p: _P) -> tuple[_E, np.ndarray]:
    """RMSNorm in c with the (a)/(b) conventions; returns (y, overflow rows). x may carry errors."""
    D = x.v.shape[-1]
    xv = x.v
    S = np.sum(xv**2, axis=-1, keepdims=True)
    ms = S / D
    v = ms + eps
    with np.errstate(all="ignore"):
        r = 1.0 / np.sqrt(v)
        rho = np.where(v > 0, ms / v, 0.0)  # sensitivity of r to a relative error of the mean square
        under = np.where(v > 0, p.tiny_c / v, np.inf)  # squares (and their sum) that underflow in c
    # Σx²/D in any order: D squares + D − 1 additions + the 1/D scaling (once, or per term) on the longest path
    rel_r = []
    for order in ORDERS:
        g = p.gamma_red(reduction_roundings(D, order), per_term=2)
        # ½(relative error of ms)·ρ + ½(eps rounded to c + the addition) + rsqrt (1/√: 2 u_c)
        with np.errstate(invalid="ignore"):  # γ = inf (a vacuous sum bound) × ρ = 0: NaN, judged as inf below
            rel_r.append(0.5 * g * rho + 0.5 * under + 0.5 * p.uc * (2 - rho) + 2 * p.uc)
    eps2 = _eps_dtype(eps, p)  # declared: the implementation adds eps' = fl(eps) instead of eps
    flush = "input" in p.a.flushes(p.t)  # declared: errors of x may be as large as x (not linearised)
    e_gain = _gain_error(w, p)
    with np.errstate(all="ignore"):
        y = xv * r * w
        ay = np.abs(y)
        # own rounding: x·r (u_c), ·w (u_c); convention (b): x·r rounded to t, then ·w (final rounding separate)
        extra = 2 * p.tiny_c * (1 + np.abs(w)) + ((p.ut * ay + p.tiny_t * np.abs(w)) if p.narrow else 0.0)
        # propagated input error: ∂y_i/∂x_j = r w_i (δ_ij − x_i x_j r²/D)
        rw = np.abs(r * w)
        out = []
        for rel, e in zip(rel_r, (x.ea, x.ep), strict=True):
            if eps2 is None and not flush and e_gain is None:  # first order (every undeclared bound)
                cross = np.sum(np.abs(xv) * e, axis=-1, keepdims=True) * r**2 / D
                total = rw * (e + np.abs(xv) * cross) + (rel + 2 * p.uc) * ay + extra
            else:  # eps', flushed inputs, a formed gain: r̂ within dr of r at any size of the change
                _, dr = _r_interval(xv, e, eps, eps2)
                r_hi = r + dr
                prop = np.abs(w) * (e * r_hi + np.abs(xv) * dr)
                if e_gain is not None:  # the gain as declared: |x̂·r̂|·ē(γ)
                    prop = prop + (np.abs(xv) + e) * r_hi * e_gain
                rel_hi = rel * (1 + dr / r)
                total = prop + (rel_hi + 2 * p.uc) * (ay + prop) + extra
            out.append(np.nan_to_num(total, nan=np.inf))
    overflow = (S > sum_of_squares_limit(D, p.c))[..., 0]  # Σx² overflows c: an accepted convention returns 0
    return _E(y, out[0], out[1]), overflow


# ---------------------------------------------------------------------------------------- RMSNorm
RMSNORM_FORMULA = (
    "0.5 + [½γ_(D+1)ρ + ½(2−ρ)u_c + 4u_c]·|y| + [t≠c]·u_t·|y|, γ_(D+1) = (D+1)u_c/(1−(D+1)u_c) "
    "(Σx²/D in any order; pairwise reference γ_(⌈log2 D⌉+2))"
)


@_shadows
def rmsnorm(x: Any, weight: Any, eps: float, dtype: Any, *, drawn: bool = False) -> Bound:
    """Bound for RMSNorm y = x·r·w, r = (Σx²/D + ε)^(-1/2), output in dtype t (compute in c).

    Derivation (first order, relative to |y_i|): Σx²/D in c errs by ≤ γ_(D+1)(u_c) in any order (D squares,
    D − 1 additions on the sequential path, the 1/D scaling); r halves it and scales it by ρ = ms/(ms + ε) ≤ 1
    (ε-dominated rows are insensitive); ε rounded to c and the addition add ½u_c(2 − ρ); rsqrt (or 1/√) 2u_c;
    x·r and ·w one u_c each. Convention (b) rounds x·r to t: + u_t·|y| (t ≠ c). The final rounding: ½ ULP.

        |ŷ − y| ≤ [½γ_(D+1)ρ + ½(2 − ρ)u_c + 4u_c]·|y| + [t ≠ c]·u_t·|y| + ½·ulp_t(|y| + δ)

    Rows whose Σx² overflows c are not judged (``overflow``: every accepted convention returns 0 there).

    ``drawn``: the law drew x (not a user's input): the rows that pass ``sites.model_rows`` (rounding errors the
    model describes: not constant, no stagnation, no underflow) are judged by the probabilistic tier too
    (``sites.rmsnorm``: Σx² in any order within λ·u·√Q(x²) instead of γ_(D+1)·Σx²).
    """
    p = _P(fmt(dtype).dtype)
    X, w = _exact(x), _exact(weight)
    D = X.shape[-1]
    y, sq_over = _rmsnorm_e(_given(X, p), w, float(eps), p)
    ov = (_row_overflow([y.v], p, X.shape[:-1]) | sq_over)[..., None] & np.ones(X.shape, dtype=bool)
    var = None
    model = drawn and not p.tier_off and sites.model_rows(X, fmt(p.c).smallest_normal, p.uc)
    if np.any(model):
        var = np.where(model[..., None], sites.rmsnorm(X, w, float(eps), p)[1], np.inf)
    return _finish(y, p, "rmsnorm", RMSNORM_FORMULA, f"D={D}", roundings_t=1, overflow=ov, var=var, tier_wanted=drawn)


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])


@_shadows
def rmsnorm_norm(x: Any, eps: float, dtype: Any) -> Bound:
    """Bound on |‖y‖₂ − √(D·ms/(ms+ε))| per row for γ = 1: ‖bounds.rmsnorm of the row‖₂ (triangle inequality:
    |‖ŷ‖ − ‖y‖| ≤ ‖ŷ − y‖) + 4(D+2)·u_64·√(D·ms/(ms+ε)) (the verifier's fp64 norm and mean square)."""
    X = _rows(_exact(x))
    D = X.shape[-1]
    b = rmsnorm(X, np.ones(D), eps, dtype)
    ms = (X * X).mean(axis=-1)
    slack = 4 * (D + 2) * U64 * np.sqrt(D * ms / (ms + eps))
    with np.errstate(invalid="ignore"):
        norms = [np.linalg.norm(e, axis=-1) + slack for e in (b.abs, b.pairwise)]
    ov = b.overflow.any(axis=-1) if b.overflow is not None else None
    text = f"‖bound of the row‖₂ + 4(D+2)·u_64·√(D·ms/(ms+eps)), bound: {b.formula}"
    return Bound(np.where(ov, np.inf, norms[0]), None, text, "rmsnorm", None, ov, norms[1])


@_shadows
def rmsnorm_scale_invariance(x: Any, weight: Any, eps: float, log2_alpha: int, dtype: Any) -> Bound:
    """Bound on |f(α·x) − f(x)|, α = 2^k: b(x) + b(αx) + the exact change |xγ|·|(ms+ε/α²)^-½ − (ms+ε)^-½|.

    The change is evaluated without cancellation, (v₂ − v₁)/(√v₁√v₂(√v₁ + √v₂)) with v₂ − v₁ = ε(1 − α⁻²), and
    carries (D + 8)·u_64 for the verifier's own fp64 arithmetic."""
    X, w = _exact(x), _exact(weight)
    alpha = 2.0**log2_alpha
    b, ba = rmsnorm(X, w, eps, dtype), rmsnorm(X * alpha, w, eps, dtype)
    ms = (X * X).mean(axis=-1, keepdims=True)
    v1, v2 = ms + eps / alpha**2, ms + eps
    with np.errstate(all="ignore"):
        change = eps * (1 - alpha**-2) / (np.sqrt(v1) * np.sqrt(v2) * (np.sqrt(v1) + np.sqrt(v2)))
        drift = np.abs(X * w) * change * (1 + (X.shape[-1] + 8) * U64)
    s = between(b, ba)
    text = f"b(x) + b(αx) + |xγ|·|(ms+eps/α²)^-½ − (ms+eps)^-½|, b: {b.formula}"
    return Bound(s.abs + drift, None, text, "rmsnorm", s.dtype, s.overflow, s.pairwise + drift)


@_shadows
def rmsnorm_gamma_scaling(x: Any, weight: Any, eps: float, dtype: Any) -> Bound:
    """Bound on |f_γ(x) − γ⊙f_1(x)|: b_γ + |γ|·b_1 + u_64·|γ|·(|x·r| + b_1) (the verifier's fp64 product γ⊙f_1)."""
    X, w = _exact(x), _exact(weight)
    bg, b1 = rmsnorm(X, w, eps, dtype), rmsnorm(X, np.ones_like(w), eps, dtype)
    r = 1 / np.sqrt((X * X).mean(axis=-1, keepdims=True) + eps)
    aw = np.abs(w)
    prod = U64 * aw * (np.abs(X) * r + b1.abs)
    pw = bg.pairwise + aw * b1.pairwise + prod
    ov = _either(bg.overflow, b1.overflow, X.shape)
    return Bound(bg.abs + aw * b1.abs + prod, None, f"b_γ + |γ|·b_1, b: {bg.formula}", "rmsnorm", bg.dtype, ov, pw)


@_shadows
def rmsnorm_row_sum(x: Any, eps: float, dtype: Any) -> Bound:
    """Bound on |Σ_i y_i − Σ_i x_i/√(ms+ε)| per row (γ = 1): Σ_i bound_i + 4(D+2)·u_64·Σ|x|/√(ms+ε) (fp64 sums)."""
    X = _rows(_exact(x))
    D = X.shape[-1]
    b = rmsnorm(X, np.ones(D), eps, dtype)
    slack = 4 * (D + 2) * U64 * np.abs(X).sum(axis=-1) / np.sqrt((X * X).mean(axis=-1) + eps)
    ov = b.overflow.any(axis=-1) if b.overflow is not None else None
    sums = [np.where(ov, np.inf, e.sum(axis=-1) + slack) for e in (b.abs, b.pairwise)]
    text = f"Σ_i bound_i + 4(D+2)·u_64·Σ|x|/√(ms+eps), bound: {b.formula}"
    return Bound(sums[0], None, text, "rmsnorm", None, ov, sums[1])


@_shadows
def rmsnorm_drift(x: Any, weight: Any, eps: float) -> Bound:
    """Bound on |f_bf16(x) − f_fp32(x)| for bf16 x and γ: b_bf16 + b_fp32 (both against one golden), in bf16 ULPs."""
    return between(rmsnorm(x, weight, eps, torch.bfloat16), rmsnorm(x, weight, eps, torch.float32))


@_shadows
def rmsnorm_vjp(
    x: Any,
    weight: Any,
    eps: float,
    grad_out: Any,
    dtype: Any,
    *,
    x_error: np.ndarray | None = None,
    grad_in: Any = None,
    drawn: bool = False,
) -> tuple[Bound, Bound]:
    """Bounds for the RMSNorm VJP: dx = r·w⊙g − (r³/D)·x·A, A = Σ_j g_j w_j x_j;  dw = Σ_rows g⊙x·r.

    ``x_error``: the backward reads x within ±x_error (AddRMSNorm: the sum h, rounded or not; else x as declared);
    ``grad_in``: a cotangent added to dx in c, rounded to t (AddRMSNorm: the stream's own, g_h).

    Derivation: autograd in c (or in t for HF's bf16 multiply: the products g·w and g·(x·r) may be rounded
    to t); r carries the forward relative error (see :func:`rmsnorm`), r³ three times it; A is a D-term dot
    product and dw an N-term sum, both in any order (γ_(D), γ_(N)); the two terms of dx are bounded
    separately (they may cancel). Deterministic throughout (the cotangent mixes errors that depend on it).
    """
    p = _P(fmt(dtype).dtype)
    X, w, G = _exact(x), _exact(weight), _exact(grad_out)
    D = X.shape[-1]
    xs = _given(X, p) if x_error is None else _E(X, x_error, x_error)
    S = np.sum(X**2, axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        v = S / D + eps
        r = 1.0 / np.sqrt(v)
        rho = np.where(v > 0, (S / D) / v, 0.0)
    with np.errstate(invalid="ignore"):
        rel = [
            0.5 * p.gamma_red(reduction_roundings(D, o), 2) * rho + 0.5 * p.uc * (2 - rho) + 2 * p.uc for o in ORDERS
        ]
    eps2 = _eps_dtype(eps, p)
    shifted = eps2 is not None or not np.all(xs.ea == 0)
    if shifted:  # declared: x read with errors, eps' added (_r_interval: any size, not linearised)
        with np.errstate(all="ignore"):
            shift = _r_interval(X, xs.ea, eps, eps2)[1] / r
        rel = [q + shift * (1 + q) for q in rel]
    r_e = _E(r, rel[0] * r, rel[1] * r)
    e_gain = _gain_error(w, p)
    gain = _E.exact(w) if e_gain is None else _E(w, e_gain, e_gain)
    gs = _given(G, p)
    gw = _to_t(_op(_mul(gs, gain), p), p)
    A = _contract(gw, xs, "...j,...j->...", D, p).map(lambda a: a[..., None])
    r3 = _op(_mul(_mul(r_e, r_e), r_e), p, 2)
    if shifted:  # r's error may be large here: r³ errs by ((1 + rel)³ − 1)·r³ exactly, not 3·rel·r³
        with np.errstate(all="ignore"):
            cubed = [((1 + q) ** 3 - 1) * r**3 for q in rel]
        r3 = _op(_E(r**3, cubed[0], cubed[1]), p, 2)
    # each term may be rounded to t before the difference: autograd's two contributions where x meets two dtypes
    # (HF T5, flax: ``sites.rmsnorm_vjp``)
    term1 = _to_t(_op(_mul(r_e, gw), p), p)
    term2 = _to_t(_op(_mul(_op(_mul(r3, A), p, 2), xs), p).map(lambda a: a / D), p)
    dx = _to_t(_op(_E(term1.v - term2.v, term1.ea + term2.ea, term1.ep + term2.ep), p), p)
    if grad_in is not None:  # one more addition in c, rounded to t
        dx = _to_t(_op(_add(dx, _given(_exact(grad_in), p)), p), p)
    xr = _to_t(_op(_mul(xs, r_e), p), p)
    gxr = _to_t(_op(_mul(gs, xr), p), p)
    N = int(np.prod(X.shape[:-1]))
    flat = gxr.map(lambda a: a.reshape(-1, D))
    dw = _contract(flat, _E.exact(np.ones(flat.v.shape[0])), "nd,n->d", max(N, 1), p)
    core = "0.5 + δ: first-order propagation of u_c, u_t roundings through dx = r·w⊙g − r³/D·x·A (any order)"
    ov_dx = None
    if p.narrow:  # a term, or g⊙w, rounded to t may overflow where dx does not: that convention returns ±inf there
        with np.errstate(all="ignore"):
            big = (np.abs(term1.v) + term1.ea > p.max_t) | (np.abs(term2.v) + term2.ea > p.max_t)
            big = big | (_row_overflow([np.abs(gw.v) + gw.ea], p, X.shape[:-1])[..., None] & np.ones(X.shape, bool))
        ov_dx = big if big.any() else None
    var_dx = var_dw = None
    model = drawn and not p.tier_off and sites.model_rows(X, fmt(p.c).smallest_normal, p.uc)
    if np.any(model) and e_gain is None and not shifted and grad_in is None:  # (the cotangent is drawn: random signs)
        rows_x, rows_g = X.reshape(-1, D), G.reshape(-1, D)
        v_dx, v_dw = sites.rmsnorm_vjp(rows_x, w, eps, rows_g, p)
        var_dx = np.where(model.reshape(-1, 1), v_dx, np.inf).reshape(X.shape)
        var_dw = v_dw if model.all() else None
    return (
        _finish(
            dx,
            p,
            "rmsnorm_vjp.dx",
            core,
            f"D={D}",
            roundings_t=5 if grad_in is None else 6,
            var=var_dx,
            overflow=ov_dx,
            tier_wanted=drawn,
        ),
        _finish(
            dw,
            p,
            "rmsnorm_vjp.dw",
            "0.5 + δ: Σ_rows g⊙x·r, γ_N (any order)",
            f"D={D}, N={N}",
            roundings_t=4,
            var=var_dw,
            tier_wanted=drawn,
        ),
    )
