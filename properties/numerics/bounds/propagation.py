"""First-order error propagation: a value with its error bounds (``_E``: every accepted order, and pairwise),
the operations on it (roundings in c and to t, products, sums, contractions, linear maps) and the last step
that turns a propagated error into a :class:`~properties.numerics.bounds.bound.Bound` (``_finish``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from golden.formats import fmt
from properties.numerics import sites
from properties.numerics import ulp as _ulp
from properties.numerics.bounds.arithmetic import (
    _P,
    U64,
)
from properties.numerics.bounds.bound import Bound
from properties.numerics.bounds.tier import _tier_spread

LAMBDA = 6.0  # Hoeffding confidence of the random-sign propagation: P(exceeded) ≤ 2·exp(−λ²/2) per element


@dataclasses.dataclass(frozen=True)
class _E:
    """A value with its error bounds: ``ea`` (any accepted order) and ``ep`` (pairwise reductions)."""

    v: np.ndarray
    ea: np.ndarray
    ep: np.ndarray

    @staticmethod
    def exact(v: Any) -> _E:
        v = np.asarray(v, dtype=np.float64)
        return _E(v, np.zeros_like(v), np.zeros_like(v))

    def map(self, f: Any) -> _E:
        """The same transformation (reshape, repeat, slice) of the value and both bounds."""
        return _E(f(self.v), f(self.ea), f(self.ep))

    def plus_error(self, a: Any, p: Any = None) -> _E:
        """Add own errors: ``a`` to the any-order bound and ``p`` (default: the same) to the pairwise one."""
        return _E(self.v, self.ea + a, self.ep + (a if p is None else p))


def _round(a: _E, u: float, tiny: float = 0.0) -> _E:
    """One rounding with unit roundoff u (and absolute error ≤ tiny in the subnormal range)."""
    return a.plus_error(u * np.abs(a.v) + tiny)


def _op(a: _E, p: _P, k: float = 1.0) -> _E:
    """k roundings in the compute precision c (each ≤ u_c·|v|, or the smallest normal of c when it underflows)."""
    return _round(a, k * p.uc, k * p.tiny_c)


def _to_t(a: _E, p: _P) -> _E:
    """An accepted convention may round this intermediate to t (a no-op when t holds c: already counted in c)."""
    return _round(a, p.ut, p.tiny_t) if p.narrow else a


def _given_error(v: np.ndarray, p: _P) -> np.ndarray | None:
    """Error of a given tensor (input, weight, cotangent) as the implementation reads it, under the declaration:
    demoted, rounded to c (u_c·|v| + half c's subnormal spacing; +inf where it overflows c); flushed inputs, |v|
    where v is subnormal in t. None when the declaration reads it exactly (every undeclared bound)."""
    flush = "input" in p.a.flushes(p.t)
    if not (p.demoted or flush):
        return None
    av = np.abs(v)
    e = np.zeros_like(av)
    if p.demoted:
        fc = fmt(p.c)
        e = e + p.uc * av + fc.smallest_subnormal / 2
        e = np.where(av >= fc.overflow_threshold, np.inf, e)
    if flush:
        e = e + np.where(av < fmt(p.t).smallest_normal, av, 0.0)
    return e


def _given(v: Any, p: _P) -> _E:
    """A given tensor as an exact value with the error of :func:`_given_error` (exact when undeclared)."""
    v = np.asarray(v, dtype=np.float64)
    e = _given_error(v, p)
    return _E.exact(v) if e is None else _E(v, e, e)


def _gain_error(w: np.ndarray, p: _P) -> np.ndarray | None:
    """Error of the RMSNorm gain γ as the implementation forms it: read as a given (:func:`_given_error`) and,
    with a declared weight offset o, formed as o + (γ − o): (u_t + u_c + u_t·u_c)·|γ − o| + u_c·|γ_eff|."""
    e = _given_error(w, p)
    o = p.a.weight_offset
    if not o:
        return e
    k = p.ut + p.uc + p.ut * p.uc
    shift = k * np.abs(w - o)
    own = shift + p.uc * (np.abs(w) + shift) + 2 * p.tiny_c
    return own if e is None else own + e * (1 + 2 * p.uc)


def _eps_dtype(eps: float, p: _P) -> float | None:
    """eps rounded to the declared eps dtype (RNE), or None when none is declared."""
    named = p.a.eps.get(fmt(p.t).name)
    if not named:
        return None
    return float(torch.tensor(float(eps), dtype=torch.float64).to(fmt(named).dtype).to(torch.float64))


def _r_interval(xv: np.ndarray, e: np.ndarray, eps: float, eps2: float | None) -> tuple[np.ndarray, np.ndarray]:
    """r = (ms + eps)^-1/2 and a bound on |r̂ − r| for inputs within ±e of x (any size of e, not linearised) and
    eps' between eps and eps2: r at the smallest and the largest mean square and eps, fp64 (8·u_64 slack)."""
    D = xv.shape[-1]
    ax = np.abs(xv)
    lo_e, hi_e = (eps, eps) if eps2 is None else (min(eps, eps2), max(eps, eps2))
    with np.errstate(all="ignore"):
        ms = np.sum(xv * xv, axis=-1, keepdims=True) / D
        ms_lo = np.sum(np.maximum(ax - e, 0.0) ** 2, axis=-1, keepdims=True) / D
        ms_hi = np.sum((ax + e) ** 2, axis=-1, keepdims=True) / D
        r = 1.0 / np.sqrt(ms + eps)
        r_hi, r_lo = 1.0 / np.sqrt(ms_lo + lo_e), 1.0 / np.sqrt(ms_hi + hi_e)
        dr = np.maximum(r_hi - r, r - r_lo) + 8 * U64 * r_hi
    return r, np.nan_to_num(dr, nan=np.inf)


def _mul(a: _E, b: _E) -> _E:
    ab, bb = np.abs(a.v), np.abs(b.v)
    return _E(a.v * b.v, bb * a.ea + ab * b.ea, bb * a.ep + ab * b.ep)


def _add(a: _E, b: _E) -> _E:
    return _E(a.v + b.v, a.ea + b.ea, a.ep + b.ep)


def _fn(a: _E, value: np.ndarray, deriv: np.ndarray) -> _E:
    """y = f(a) with |f'(a)| = deriv (first order)."""
    d = np.abs(deriv)
    return _E(value, d * a.ea, d * a.ep)


def _mix(e: np.ndarray, W: np.ndarray, random_weights: bool) -> np.ndarray:
    """Bound on |W e| given |e| ≤ ``e`` elementwise (rows of W mix the last axis of e): Σ|W|·e, or, for weights
    drawn with independent symmetric signs, min(Σ|W|·e, λ·√(Σ W²·e²)) (Hoeffding over the signs of W)."""
    det = sites.matmul(e, np.abs(W).T)
    if not random_weights:
        return det
    # the 2-norm scaled by the largest term of each side: e² of an error near 1e-300 underflows to 0 in float64
    se = np.max(np.abs(e), axis=-1, keepdims=True)
    sw = float(np.max(np.abs(W), initial=0.0))
    with np.errstate(over="ignore", invalid="ignore"):
        en = e / np.where(se > 0, se, 1.0)  # a row of zeros stays zeros
        wn = W / sw if sw > 0 else W
        prob = LAMBDA * se * sw * np.sqrt(sites.matmul(en * en, (wn * wn).T))
    return np.minimum(det, np.where(np.isnan(prob), np.inf, prob))


def _contract(a: _E, b: _E, spec: str, n: int, p: _P) -> _E:
    """y = einsum(spec, a, b) summing n products in c in any order: propagated errors (deterministic) + own."""
    ein = np.einsum
    absa, absb = np.abs(a.v), np.abs(b.v)
    ga, gp = p.gamma_sum(n, per_term=1)
    mag = ein(spec, absa, absb)
    under = 2 * n * p.tiny_c
    ea = ein(spec, a.ea, absb) + ein(spec, absa, b.ea) + ga * mag + under
    ep = ein(spec, a.ep, absb) + ein(spec, absa, b.ep) + gp * mag + under
    return _E(ein(spec, a.v, b.v), ea, ep)


def _weight_in(a: _E, W: np.ndarray, p: _P) -> np.ndarray | float:
    """|a|·ē(W)ᵀ: the error of weights read as declared (:func:`_given_error`; 0 when undeclared)."""
    e = _given_error(W, p)
    if e is None:
        return 0.0
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(np.abs(a.v) @ e.T, nan=np.inf)


def _linear(a: _E, W: np.ndarray, p: _P, random_weights: bool = False) -> _E:
    """y = a Wᵀ (nn.Linear): the input errors mixed by W (see :func:`_mix`), the D-term dot products accumulated
    in c in any order (deterministic), then possibly rounded to t."""
    n = W.shape[1]
    ga, gp = p.gamma_sum(n, per_term=1)
    mag = np.abs(a.v) @ np.abs(W).T
    under = 2 * n * p.tiny_c  # underflow of the products and partial sums
    wrong = _weight_in(a, W, p)
    ea = _mix(a.ea, W, random_weights) + ga * mag + under + wrong
    ep = _mix(a.ep, W, random_weights) + gp * mag + under + wrong
    return _to_t(_E(a.v @ W.T, ea, ep), p)


def _row_overflow(vals: list[np.ndarray], p: _P, rows: tuple[int, ...]) -> np.ndarray:
    """Rows (leading shape ``rows``) where an intermediate exceeds t's range (an accepted convention overflows)."""
    out = np.zeros(rows, dtype=bool)
    for v in vals:
        big = np.abs(v) > p.max_t
        out |= big.reshape(*rows, -1).any(axis=-1)
    return out


def _finish(
    y: _E,
    p: _P,
    component: str,
    formula_core: str,
    shape_note: str,
    *,
    roundings_t: int = 1,
    overflow: np.ndarray | None = None,
    var: np.ndarray | None = None,
    fixed: np.ndarray | float = 0.0,
    final: sites.Final | None = None,
    tier_wanted: bool = False,
) -> Bound:
    """δ scaled for second-order terms; abs = δ + ½·ulp_t(|y| + δ); ulps at y (the golden value to first order).
    ``var``: the probabilistic tier's variance proxy per element (+inf where it does not apply) and ``fixed`` its
    deterministic part: prob = (λ·√var + fixed)·(second-order factor) + ½·ulp_t (:func:`probabilistic`);
    ``final``: the partial sums of the last dot product, apart from ``var`` (:func:`_tier_spread`); ``tier_wanted``:
    the law drew the inputs, so where a declaration keeps the tier off the bound says why (``Bound.tier_off``)."""
    second = 1.0 / (1.0 - roundings_t * p.ut - 64 * p.uc)

    def total(e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(all="ignore"):
            delta = np.where(np.isnan(e), np.inf, e * second)
            spacing_out = _ulp.ulp(np.abs(y.v) + np.where(np.isfinite(delta), delta, 0.0), p.t)
            spacing_y = _ulp.ulp(y.v, p.t)
            ab = delta + 0.5 * spacing_out  # (½·2^-1074 underflows to 0 in float64: ulps is computed apart)
            ulps = delta / spacing_y + 0.5 * (spacing_out / spacing_y)
            if "output" in p.a.flushes(p.t):  # declared: a result below t's smallest normal may be returned as 0
                normal = fmt(p.t).smallest_normal
                flushed = np.where(np.abs(y.v) - delta < normal, normal, 0.0)
                ab, ulps = ab + flushed, ulps + flushed / spacing_y
            if overflow is not None:
                ab, ulps = np.where(overflow, np.inf, ab), np.where(overflow, np.inf, ulps)
        return ab, ulps

    ab, ulps = total(y.ea)
    pw, _ = total(y.ep)
    # no "max … ULP" over the elements here: the message gives the bound at the element it judges (a maximum,
    # e.g. a zero row's, would contradict it); Bound.max_ulps / accuracy keep it
    formula = f"{formula_core} [{component}, {p.name}, {shape_note}]"
    ov = None if overflow is None else np.broadcast_to(np.asarray(overflow, dtype=bool), ab.shape).copy()
    prob, note = None, ""
    if var is not None and not p.tier_off:
        applies = np.broadcast_to(np.isfinite(var), ab.shape)
        if ov is not None:
            applies = applies & ~ov
        if applies.any():
            with np.errstate(all="ignore"):
                spread, note = _tier_spread(np.where(applies, var, 0.0), final, applies)
                delta = (spread + fixed) * second
                prob = np.where(applies, delta + 0.5 * _ulp.ulp(np.abs(y.v) + delta, p.t), np.inf)
    off = p.tier_off if tier_wanted else ""
    return Bound(ab, ulps, formula, component, p.t, ov, pw, prob=prob, prob_note=note, tier_off=off)
