"""SwiGLU's bounds: the forward (:func:`swiglu`), SiLU and the exhaustive gate law, the bf16/fp32 drift,
linearity in W_down and the VJP; ``_swiglu_e`` is the FFN's propagation (the Block uses it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from golden.formats import fmt
from properties.numerics import sites
from properties.numerics.bounds.arithmetic import (
    _P,
    U64,
    _shadows,
)
from properties.numerics.bounds.bound import Bound, between
from properties.numerics.bounds.propagation import (
    _E,
    LAMBDA,
    _add,
    _contract,
    _finish,
    _fn,
    _given,
    _linear,
    _mul,
    _op,
    _row_overflow,
    _to_t,
)
from properties.numerics.ulp import as_f64 as _exact  # the one tensor → float64 conversion


def _sigmoid(z: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(z))
        return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _silu_e(g: _E, p: _P) -> tuple[_E, np.ndarray]:
    """s = silu(g) evaluated in c (≤ 4 u_c: exp, add, divide, multiply) and possibly rounded to t."""
    sig = _sigmoid(g.v)
    s = g.v * sig
    ds = sig * (1 + g.v * (1 - sig))
    s_e = _op(_fn(g, s, ds), p, 4.0)
    s_e = s_e.plus_error(2 * np.abs(g.v) * p.tiny_c)  # e^(−|z|) may underflow (or flush) in c: ≤ |z|·tiny_c
    return _to_t(s_e, p), sig


def _silu_grad_own(z: np.ndarray, sig: np.ndarray, p: _P) -> np.ndarray:
    """Own error of silu'(z) = σ + z·σ(1 − σ) evaluated in c from a computed σ̂ = σ(1 + θ), |θ| ≤ 4u_c (exp, add,
    divide): θ propagates with ∂silu'/∂σ·σ = (1 + z − 2zσ)·σ — for z ≫ 1, 1 − σ̂ cancels and z·(1 − σ̂) carries
    |z|·4u_c — and the ≤ 5 roundings of the sum, its product and 1 − σ count against the terms' magnitudes
    σ + |zσ(1 − σ)| (the same for σ(1 + z(1 − σ)), torch's formula); e^(−|z|) underflowing: |z|·tiny_c."""
    terms = sig + np.abs(z * sig * (1 - sig))
    return 4 * p.uc * sig * np.abs(1 + z - 2 * z * sig) + 5 * p.uc * terms + (2 + 2 * np.abs(z)) * p.tiny_c


def _swiglu_e(x: _E, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray, p: _P, rnd: bool) -> tuple[_E, dict[str, Any]]:
    g = _linear(x, Wg, p, rnd)
    u = _linear(x, Wu, p, rnd)
    s, sig = _silu_e(g, p)
    h = _to_t(_op(_mul(s, u), p), p)
    y = _linear(h, Wd, p, rnd)
    return y, {"g": g, "u": u, "s": s, "sig": sig, "h": h}


# ----------------------------------------------------------------------------------------- SwiGLU
@_shadows
def swiglu(x: Any, w_gate: Any, w_up: Any, w_down: Any, dtype: Any, *, random_weights: bool = False) -> Bound:
    """Bound for SwiGLU y = W_d h, h = silu(g)⊙u, g = W_g x, u = W_u x, output in t.

    Derivation (first order, per output j): with ē(v) the error bound of an intermediate,
      ē(g) = γ_D·(|W_g||x|) (D products in any order, in c) + [t≠c]·u_t|g|   (the same for u),
      ē(s) = |silu'(g)|·ē(g) + 4u_c|s| + [t≠c]·u_t|s|,   silu'(z) = σ(z)(1 + z(1 − σ(z))),
      ē(h) = |u|·ē(s) + |s|·ē(u) + u_c|h| + [t≠c]·u_t|h|,
      ē(y) = mix(W_d, ē(h)) + γ_F·(|W_d||h|),
    mix(W, ē) = Σ_k |W_jk|·ē_k, or min(that, λ√Σ_k W_jk²ē_k²) for weights drawn with independent symmetric
    signs (``random_weights``; see the module docstring); then ½ ULP for the final rounding.
    """
    p = _P(fmt(dtype).dtype)
    X, Wg, Wu, Wd = _exact(x), _exact(w_gate), _exact(w_up), _exact(w_down)
    D, F = X.shape[-1], Wg.shape[0]
    X2 = X.reshape(-1, D)
    y, t = _swiglu_e(_given(X2, p), Wg, Wu, Wd, p, random_weights)
    ov = _row_overflow([t["g"].v, t["u"].v, t["h"].v, y.v], p, (X2.shape[0],))
    y = y.map(lambda a: a.reshape(*X.shape[:-1], D))
    ov = np.broadcast_to(ov.reshape(*X.shape[:-1], 1), y.v.shape)
    mix = f"mix λ={LAMBDA:g} over random signs" if random_weights else "mix Σ|W|ē (deterministic)"
    core = (
        f"0.5 + δ; γ_D, γ_F any order (pairwise reference ⌈log2⌉), silu 4u_c, roundings of g,u,silu,h to t "
        f"(u_t={p.ut:.3g}, u_c={p.uc:.3g}), {mix}"
    )
    var = final = None
    if random_weights and not p.tier_off:
        # the computed hidden units within twice their first-order deterministic bound: its second-order
        # factor (_finish: 1/(1 − 6u_t − 64u_c), ≤ 1.03) is far inside that
        _, var, fin = sites.swiglu(X2, Wg, Wu, Wd, p, h_err=2 * t["h"].ea)
        var, final = var.reshape(y.v.shape), sites.Final(*(a.reshape(y.v.shape) for a in fin))
    return _finish(
        y, p, "swiglu", core, f"D={D}, F={F}", roundings_t=6, overflow=ov, var=var, final=final,
        tier_wanted=random_weights,
    )  # fmt: skip


@_shadows
def silu(z: Any, dtype: Any) -> Bound:
    """Bound for SiLU s = z·σ(z) evaluated in c: (exp, add, divide, multiply) ≤ 4u_c·|s| (the condition number
    |1 + z(1 − σ(z))| only matters for errors *in* z, which is exact here); convention z * sigmoid(z) in t rounds
    σ(z) to t first: + u_t·|s| (t ≠ c); ½ ULP for the final rounding. A formula that cancels
    (1 − 1/(1 + e^z) for z ≪ 0) exceeds it.
    """
    p = _P(fmt(dtype).dtype)
    Z = _exact(z)
    s = _sigma_rounded(_silu_e(_given(Z, p), dataclasses.replace(p, t=p.c, c_=p.c))[0], Z, p)
    two = f" + u_{fmt(p.t).name}·|silu(z)| + |z|·ulp_t(0)/2 (σ rounded to t)" if p.narrow else ""
    return _finish(s, p, "silu", f"0.5 + 4·u_{fmt(p.c).name}·|silu(z)|{two}", f"n={Z.size}", roundings_t=2)


def _sigma_rounded(s: _E, Z: np.ndarray, p: _P) -> _E:
    """σ(z) rounded to t before the product z·σ(z) (z * sigmoid(z) in t): |z|·(u_t·σ + subnormal half-spacing)."""
    return s.plus_error(p.ut * np.abs(s.v) + np.abs(Z) * p.tiny_t) if p.narrow else s


@_shadows
def silu_gate(x: Any, dtype: Any) -> Bound:
    """Bound for the exhaustive gate law y = silu(x)·x (SwiGLU with F = D = 1 and identity weights: g = u = x
    exactly): silu in c (4u_c, and underflow — e^(−x) overflowing fp32 for x < −88.7 makes torch's silu 0,
    inside the |x|·tiny_c term), σ and silu possibly rounded to t, the product in c (u_c), ½ ULP final rounding.
    Identity weights are not random: nothing here is probabilistic."""
    p = _P(fmt(dtype).dtype)
    X = _exact(x)
    xs = _given(X, p)
    s = _sigma_rounded(_silu_e(xs, p)[0], X, p)
    y = _op(_mul(s, xs), p)
    core = f"0.5 + (4u_c + ≤2u_t)·|silu(x)·x| + x²·tiny_c [u_t={p.ut:.3g}, u_c={p.uc:.3g}]"
    return _finish(y, p, "silu_gate", core, f"n={X.size}", roundings_t=3)


@_shadows
def swiglu_drift(x: Any, w_gate: Any, w_up: Any, w_down: Any) -> Bound:
    """Bound on |f_bf16 − f_fp32| on the same bf16 inputs and (random) weights: b_bf16 + b_fp32, in bf16 ULPs."""
    args = (x, w_gate, w_up, w_down)
    b16 = swiglu(*args, torch.bfloat16, random_weights=True)
    return between(b16, swiglu(*args, torch.float32, random_weights=True))


@_shadows
def swiglu_linearity(x: Any, w_gate: Any, w_up: Any, w_down: Any, w1: Any, w2: Any, dtype: Any) -> Bound:
    """Bound on |f(W) − (f(W₁) + f(W₂))| in W_down (W₂ = W − W₁ rounded to t): b(W) + b(W₁) + b(W₂) +
    |h|·|W − W₁ − W₂| (the rounding of W₂) + u_64·(|h||W₁| + |h||W₂| + b(W₁) + b(W₂)) (the verifier's fp64 sum).

    Outputs whose exact value, or whose hidden units, reach half the dtype's range are not judged (+inf): one
    of the three may overflow where the others do not."""
    X, Wg, Wu, W, W1, W2 = (_exact(a) for a in (x, w_gate, w_up, w_down, w1, w2))
    bs = [swiglu(X, Wg, Wu, wd, dtype, random_weights=True) for wd in (W, W1, W2)]
    a = X @ Wg.T
    with np.errstate(over="ignore"):
        h = a * _sigmoid(a) * (X @ Wu.T)
        ah = np.abs(h)
        split = ah @ np.abs(W - W1 - W2).T * (1 + 2.0**-40)
        fp64_sum = U64 * (ah @ np.abs(W1).T + ah @ np.abs(W2).T + bs[1].abs + bs[2].abs)
        big = fmt(dtype).max / 2
        skip = ah.max(axis=-1, keepdims=True) >= big
        skip = skip | np.any([np.abs(h @ w.T) >= big for w in (W, W1, W2)], axis=0)
    total = [sum(e) + split + fp64_sum for e in ((b.abs for b in bs), (b.pairwise for b in bs))]
    ov = np.broadcast_to(skip, total[0].shape).copy()
    for b in bs:
        ov |= b.overflow
    text = f"b(W) + b(W₁) + b(W₂) + |h|·|W − W₁ − W₂|, b: {bs[0].formula}"
    return Bound(np.where(ov, np.inf, total[0]), None, text, "swiglu", fmt(dtype).dtype, ov, total[1])


@_shadows
def swiglu_vjp(x: Any, w_gate: Any, w_up: Any, w_down: Any, grad_out: Any, dtype: Any) -> tuple[Bound, ...]:
    """Bounds for the SwiGLU VJP (dx, dW_gate, dW_up, dW_down), same scheme as :func:`swiglu`, deterministic:

    dh = W_dᵀγ, dW_d = Σ_rows γ⊗h, du = dh⊙s, dg = dh⊙u⊙silu'(g), dx = W_gᵀdg + W_uᵀdu,
    dW_g = Σ_rows dg⊗x, dW_u = Σ_rows du⊗x; every product/linear output may be rounded to t, silu' costs
    its own error (:func:`_silu_grad_own`) and carries |silu''(g)|·ē(g), silu''(z) = σ(1−σ)(2 + z(1 − 2σ));
    every sum in any order. Where an intermediate of a row (g, u, h, dh, du, dg) exceeds t's range, dx of that
    row and every weight gradient are not judged (+inf: the sums over rows carry the overflow); the same for a
    gradient whose own value exceeds it.
    """
    p = _P(fmt(dtype).dtype)
    X, Wg, Wu, Wd, Gy = (_exact(a) for a in (x, w_gate, w_up, w_down, grad_out))
    D, F = X.shape[-1], Wg.shape[0]
    X2, G2 = X.reshape(-1, D), Gy.reshape(-1, D)
    N = X2.shape[0]
    xs, gy = _given(X2, p), _given(G2, p)
    _, t = _swiglu_e(xs, Wg, Wu, Wd, p, False)
    g, u, s, sig, h = t["g"], t["u"], t["s"], t["sig"], t["h"]
    dh = _linear(gy, Wd.T, p)
    du = _to_t(_op(_mul(dh, s), p), p)
    d1 = sig * (1 + g.v * (1 - sig))
    d2 = sig * (1 - sig) * (2 + g.v * (1 - 2 * sig))
    ds = _fn(g, d1, d2).plus_error(_silu_grad_own(g.v, sig, p))
    dg = _to_t(_op(_mul(_to_t(_op(_mul(dh, u), p), p), ds), p), p)
    dx = _to_t(_op(_add(_linear(dg, Wg.T, p), _linear(du, Wu.T, p)), p), p).map(lambda a: a.reshape(X.shape))
    dWg = _to_t(_contract(dg, xs, "nf,nd->fd", N, p), p)
    dWu = _to_t(_contract(du, xs, "nf,nd->fd", N, p), p)
    dWd = _to_t(_contract(gy, h, "nd,nf->df", N, p), p)
    core = "0.5 + δ; first-order propagation through the SwiGLU backward graph, every sum in any order"
    note = f"D={D}, F={F}, N={N}"
    rows = _row_overflow([v.v for v in (g, u, h, dh, du, dg)], p, (N,))

    def overflow(e: _E, per_row: bool) -> np.ndarray:
        own = np.abs(e.v) > p.max_t
        return own | (rows.reshape((*X.shape[:-1], 1)) if per_row else rows.any())

    return tuple(
        _finish(e, p, f"swiglu_vjp.{n}", core, note, roundings_t=10, overflow=overflow(e, n == "dx"))
        for n, e in (("dx", dx), ("dw_gate", dWg), ("dw_up", dWu), ("dw_down", dWd))
    )
