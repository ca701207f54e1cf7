"""The attention and Block bounds: RoPE, causal GQA attention (:func:`attention`) and the pre-norm Block
(:func:`block`), composed from the RMSNorm and SwiGLU propagations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from golden.formats import fmt
from properties.numerics import sites
from properties.numerics.bounds.arithmetic import (
    _P,
    ORDERS,
    _shadows,
    reduction_roundings,
)
from properties.numerics.bounds.bound import Bound
from properties.numerics.bounds.feedforward import _swiglu_e
from properties.numerics.bounds.norm import _rmsnorm_e
from properties.numerics.bounds.propagation import (
    _E,
    _add,
    _contract,
    _finish,
    _given,
    _linear,
    _mul,
    _op,
    _round,
    _row_overflow,
    _to_t,
)
from properties.numerics.ulp import as_f64 as _exact  # the one tensor → float64 conversion


# -------------------------------------------------------------------------------- attention, Block
def _rope_e(q: _E, pos: np.ndarray, K: int, theta: float, p: _P) -> _E:
    """q' = q⊙cos + rotate_half(q)⊙sin at positions ``pos``. Angles t·ω_i, ω_i = θ^(−2i/K) formed in c
    (``sites.rope_frequencies``: ≤ (3 + ln θ·2i/K where 2i/K is inexact)·u_c), times t (u_c): |Δangle| ≤ t·ω_i·(B_i +
    u_c); cos/sin in c (+u_c) and possibly rounded to t (HF); both products and the sum possibly rounded to t.
    """
    freq, b_freq = sites.rope_frequencies(K, theta, p.uc)
    ang = np.asarray(pos)[:, None] * np.concatenate([freq, freq])[None, :]  # (T, K)
    T = ang.shape[0]
    dang = (ang * (np.concatenate([b_freq, b_freq]) + p.uc) + p.uc).reshape(1, T, 1, K)  # angle + cos/sin errors
    cos_e = _to_t(_E(np.cos(ang).reshape(1, T, 1, K), dang, dang), p)
    sin_e = _to_t(_E(np.sin(ang).reshape(1, T, 1, K), dang, dang), p)
    half = K // 2
    rot = q.map(lambda a: np.concatenate([a[..., half:], a[..., :half]], -1))
    rot = _E(np.concatenate([-q.v[..., half:], q.v[..., :half]], -1), rot.ea, rot.ep)
    a = _to_t(_op(_mul(q, cos_e), p), p)
    b = _to_t(_op(_mul(rot, sin_e), p), p)
    return _to_t(_op(_add(a, b), p), p)


def _attention_e(a: _E, W: tuple[np.ndarray, ...], cfg: Any, p: _P, rnd: bool, J: np.ndarray | None = None) -> _E:
    """The attention output at the query tokens J (default all), every key of the sequence."""
    wq, wk, wv, wo = W
    B, T, D = a.v.shape
    J = np.arange(T) if J is None else np.asarray(J)
    H, G = cfg.n_heads, cfg.n_kv_heads
    K = D // H

    def heads(e: _E, n: int) -> _E:
        return e.map(lambda arr: arr.reshape(B, arr.shape[1], n, K))

    theta = float(cfg.rope_theta)
    q = _rope_e(heads(_linear(a.map(lambda arr: arr[:, J]), wq, p, rnd), H), J, K, theta, p)
    k = _rope_e(heads(_linear(a, wk, p, rnd), G), np.arange(T), K, theta, p)
    v = heads(_linear(a, wv, p, rnd), G)
    k, v = (e.map(lambda arr: np.repeat(arr, H // G, axis=2)) for e in (k, v))
    inv = 1.0 / math.sqrt(K)
    sc = _contract(q, k, "bthj,bshj->bhts", K, p).map(lambda arr: arr * inv)
    sc = _to_t(_op(_to_t(sc, p), p), p)  # matmul → t, × scale → t
    causal = np.arange(T)[None, :] <= J[:, None]  # (len(J), T)
    s = np.where(causal, sc.v, -np.inf)
    ex = np.where(causal, np.exp(s - s.max(axis=-1, keepdims=True)), 0.0)
    prob = ex / ex.sum(axis=-1, keepdims=True)
    # softmax: Δp_t = p_t(Δs_t − Σ_s p_s Δs_s); own error in c: exp (2u_c), the positive T-term sum in any
    # order (γ_(T−1), deterministic: its terms are all of one sign), the divide (u_c)
    own = [(p.gamma_red(reduction_roundings(T, o)) + 3 * p.uc) * prob for o in ORDERS]
    errs = []
    for e, extra in zip((sc.ea, sc.ep), own, strict=True):
        e = np.where(causal, e, 0.0)
        errs.append(prob * (e + np.sum(prob * e, axis=-1, keepdims=True)) + extra)
    pr = _to_t(_E(prob, errs[0], errs[1]), p)
    o = _to_t(_contract(pr, v, "bhts,bshj->bthj", T, p), p).map(lambda arr: arr.reshape(B, len(J), H * K))
    return _linear(o, wo, p, rnd)


@_shadows
def attention(x: Any, wq: Any, wk: Any, wv: Any, wo: Any, config: Any, dtype: Any, *, random_weights: bool = False):
    """Bound for causal GQA attention with RoPE (see :func:`block` for the conventions covered)."""
    p = _P(fmt(dtype).dtype)
    X = _exact(x)
    out = _attention_e(_given(X, p), tuple(_exact(w) for w in (wq, wk, wv, wo)), config, p, random_weights)
    core = "0.5 + δ; projections, RoPE, scores, softmax, p·v, W_o (HF bf16 roundings), every sum in any order"
    note = f"B,T,D={X.shape}, H={config.n_heads}, G={config.n_kv_heads}"
    return _finish(out, p, "attention", core, note, roundings_t=12)


@_shadows
def block(
    x: Any,
    params: Mapping[str, Any],
    config: Any,
    dtype: Any,
    *,
    random_weights: bool = False,
    drawn: bool = False,
    tokens: Any = None,
) -> Bound:
    """Bound for the pre-norm Block out = h + SwiGLU(RMSNorm(h)), h = x + attn(RMSNorm(x)), output in t.

    Conventions covered in addition to those of :func:`rmsnorm` and :func:`swiglu`: the reference (projections
    in t, RoPE/scores/softmax/p·v in c, heads rounded to t) and HF-Llama's eager bf16 decoder layer (cos/sin
    rounded to t; q·cos, rotate_half(q)·sin and their sum rounded to t; q·kᵀ rounded to t, × 1/√K rounded
    again; softmax in fp32 then probabilities rounded to t; p·v rounded to t; residual sums in t). Errors of
    each stage propagate first-order into the next (RMSNorm through its Jacobian r·w(I − x xᵀ r²/D),
    softmax through p(Δs − Σ p Δs)); every sum and dot product in any order; the projections mix errors
    probabilistically only for ``random_weights`` (the laws' drawn weights); + ½ ULP.

    ``tokens`` (query indices, default all): the bound of out[:, tokens] only (every key still counts): a long
    sequence is judged on a sample of its positions. The probabilistic tier (``sites.block``) applies when the law
    drew the weights (``random_weights``) and x (``drawn``), and every row of x passes ``sites.model_rows``.
    """
    p = _P(fmt(dtype).dtype)
    X = _exact(x)
    P = {k: _exact(v) for k, v in params.items()}
    eps = float(config.norm_eps)
    xs = _given(X, p)
    B, T, D = X.shape
    J = np.arange(T) if tokens is None else np.asarray(tokens)
    a, ov1 = _rmsnorm_e(xs, P["attn_norm.weight"], eps, p)
    a = _to_t(a, p)  # the norm's output is stored in t (the ½ ULP final rounding of RMSNorm)
    W = tuple(P[f"attn.{n}.weight"] for n in ("wq", "wk", "wv", "wo"))
    xj = xs.map(lambda arr: arr[:, J])
    h = _round(_add(xj, _attention_e(a, W, config, p, random_weights, J)), p.u_store, p.tiny_store)  # in t
    b, ov2 = _rmsnorm_e(h, P["ffn_norm.weight"], eps, p)
    b = _round(b, p.u_store, p.tiny_store)
    nJ = len(J)
    Wf = (P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"])
    f, t = _swiglu_e(b.map(lambda arr: arr.reshape(B * nJ, D)), *Wf, p, random_weights)
    f = _round(f.map(lambda arr: arr.reshape(B, nJ, D)), p.u_store, p.tiny_store)  # the FFN output is stored in t
    out = _add(h, f)
    if p.demoted:  # declared c narrower than t: the last residual sum may run in c (then exact in t)
        out = _op(out, p)
    ov = _row_overflow([t["g"].v, t["u"].v, t["h"].v], p, (B * nJ,)).reshape(B, nJ) | ov1[:, J] | ov2
    ov = np.broadcast_to(ov[..., None], (B, nJ, D))
    core = (
        "0.5 + δ; RMSNorm → attention (RoPE, scores, softmax, p·v) → residual → RMSNorm → SwiGLU → residual, "
        "every HF-bf16 rounding to t, every sum in any order"
    )
    judged = "" if nJ == T else f" ({nJ} positions judged)"
    note = f"D={D}, T={T}{judged}, H={config.n_heads}, G={config.n_kv_heads}, F={Wf[0].shape[0]}"
    var, fixed, final = None, 0.0, None
    if random_weights and drawn and not p.tier_off and sites.model_rows(X, fmt(p.c).smallest_normal, p.uc).all():
        var, fixed, final = sites.block(X, P, config, p, J)
    return _finish(
        out,
        p,
        "block",
        core,
        note,
        roundings_t=24,
        overflow=ov,
        var=var,
        fixed=fixed,
        final=final,
        tier_wanted=random_weights and drawn,
    )
