"""The mathematical definitions the golden engine evaluates: one short function per component, in plain mpmath.

Check each against its paper here. Every function computes at the precision of the mpmath context ``ctx`` it is
given, on numpy object arrays of ``ctx.mpf`` (rows on the last axis, ``nn.Linear`` weight layouts); nothing is
rounded to a float in between. A function whose result ends in a sum also returns its *scale* Σ|terms|, the
magnitude against which a cancelling result's error is measured. Precision, deadlines, input reading, shape
checks, the fast double-double paths and validation are elsewhere (:mod:`golden.framework`, :mod:`golden.fast`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Arr = np.ndarray  # a numpy object array of ctx.mpf


def elementwise(ctx: Any, fn: Callable[[Any, Any], Any], a: Arr) -> Arr:
    """fn(ctx, ·) applied to every element of a."""
    return np.frompyfunc(lambda z: fn(ctx, z), 1, 1)(a)


def _inv_sqrt(ctx: Any, v: Any) -> Any:
    return 1 / ctx.sqrt(v) if v != 0 else ctx.nan  # a zero row with ε = 0: 0/0 has no value


def rmsnorm(ctx: Any, X: Arr, w: Arr, eps: float) -> Arr:
    """RMSNorm (Zhang & Sennrich 2019) of each row x (D): y = x / √(Σx²/D + ε) ⊙ w."""
    Y = np.empty_like(X)
    for i in np.ndindex(X.shape[:-1]):
        x = X[i]
        Y[i] = x * _inv_sqrt(ctx, ctx.fdot(x, x) / len(x) + eps) * w
    return Y


def layernorm(ctx: Any, X: Arr, w: Arr, b: Arr, eps: float) -> tuple[Arr, Arr]:
    """LayerNorm (Ba et al. 2016) of each row x (D): y = (x − μ) / √(Σ(x − μ)²/D + ε) ⊙ w + b, μ = Σx/D.

    Scale (x − μ cancels): (|x| + |μ|)·r·|w| + |b| with r = 1/√(…)."""
    Y, S = np.empty_like(X), np.empty_like(X)
    for i in np.ndindex(X.shape[:-1]):
        x = X[i]
        mu = ctx.fsum(x) / len(x)
        c = x - mu
        r = _inv_sqrt(ctx, ctx.fdot(c, c) / len(x) + eps)
        Y[i] = c * r * w + b
        S[i] = (abs(x) + abs(mu)) * r * abs(w) + abs(b)
    return Y, S


def silu(ctx: Any, z: Any) -> Any:
    """SiLU / Swish-1 (Elfwing et al. 2018; Ramachandran et al. 2017): silu(z) = z / (1 + e^(−z))."""
    return z / (1 + ctx.exp(-z))


def sigmoid(ctx: Any, z: Any) -> Any:
    """σ(z) = 1 / (1 + e^(−z)), so that silu(z) = z·σ(z) and silu'(z) = σ(z)(1 + z(1 − σ(z)))."""
    return 1 / (1 + ctx.exp(-z))


def linear(ctx: Any, W: Arr, X: Arr) -> tuple[Arr, Arr]:
    """A bias-free ``nn.Linear`` on each row x (n) of X: y = W x for W (M, n). Scale |W| |x|."""
    rows, arows = W.tolist(), abs(W).tolist()
    X2 = X.reshape(-1, X.shape[-1])
    Y, S = np.empty((X2.shape[0], len(rows)), dtype=object), np.empty((X2.shape[0], len(rows)), dtype=object)
    for i, (x, ax) in enumerate(zip(X2.tolist(), abs(X2).tolist(), strict=True)):
        Y[i, :] = [ctx.fdot(r, x) for r in rows]
        S[i, :] = [ctx.fdot(r, ax) for r in arows]
    return Y.reshape(*X.shape[:-1], len(rows)), S.reshape(*X.shape[:-1], len(rows))


def swiglu(ctx: Any, X: Arr, Wg: Arr, Wu: Arr, Wd: Arr) -> tuple[Arr, Arr]:
    """SwiGLU (Shazeer 2020) of each row x (D): y = W_down (silu(W_gate x) ⊙ W_up x); W_gate, W_up (F, D)."""
    g, _ = linear(ctx, Wg, X)
    u, _ = linear(ctx, Wu, X)
    return linear(ctx, Wd, elementwise(ctx, silu, g) * u)


def rope(ctx: Any, v: Arr, t: int, freqs: list[Any]) -> list[Any]:
    """Rotary position embedding (Su et al. 2021), rotate-half pairing as HF Llama: the pair (v_i, v_{i+K/2})
    is rotated by the angle t·f_i, f_i = θ^(−2i/K)."""
    h = len(v) // 2
    out = [None] * len(v)
    for i in range(h):
        c, s = ctx.cos(t * freqs[i]), ctx.sin(t * freqs[i])
        out[i] = v[i] * c - v[i + h] * s
        out[i + h] = v[i + h] * c + v[i] * s
    return out


def attention(ctx: Any, X: Arr, wq: Arr, wk: Arr, wv: Arr, wo: Arr, cfg: Any) -> tuple[Arr, Arr]:
    """Causal self-attention with grouped-query heads (Ainslie et al. 2023) and RoPE, X (B, T, D), K = D/H:

    out_t = W_o concat_h Σ_{s ≤ t} softmax_s(q_{h,t} · k_{g,s} / √K) v_{g,s},  g = h // (H/G),
    q = RoPE(W_q x), k = RoPE(W_k x), v = W_v x at positions t = 0..T−1, base θ = cfg.rope_theta.
    The softmax is evaluated shifted by its maximum (the same function). Scale: that of W_o."""
    B, T, D = X.shape
    H, G = cfg.n_heads, cfg.n_kv_heads
    K = D // H
    q = linear(ctx, wq, X)[0].reshape(B, T, H, K)
    k = linear(ctx, wk, X)[0].reshape(B, T, G, K)
    v = linear(ctx, wv, X)[0].reshape(B, T, G, K)
    freqs = [ctx.power(ctx.mpf(float(cfg.rope_theta)), ctx.mpf(-2 * i) / K) for i in range(K // 2)]
    qr = [[[rope(ctx, q[b, t, h], t, freqs) for h in range(H)] for t in range(T)] for b in range(B)]
    kr = [[[rope(ctx, k[b, t, g], t, freqs) for g in range(G)] for t in range(T)] for b in range(B)]
    inv = 1 / ctx.sqrt(K)
    heads = np.empty((B, T, H * K), dtype=object)
    for b in range(B):
        for h in range(H):
            g = h // (H // G)
            for t in range(T):
                scores = [ctx.fdot(qr[b][t][h], kr[b][s][g]) * inv for s in range(t + 1)]
                m = max(scores)
                e = [ctx.exp(s - m) for s in scores]
                Z = ctx.fsum(e)
                for j in range(K):
                    heads[b, t, h * K + j] = ctx.fdot(e, [v[b, s, g, j] for s in range(t + 1)]) / Z
    return linear(ctx, wo, heads)


def block(ctx: Any, X: Arr, P: Mapping[str, Arr], cfg: Any) -> tuple[Arr, Arr]:
    """The pre-norm Block (Llama): h = x + attn(RMSNorm(x; w_attn)), out = h + SwiGLU(RMSNorm(h; w_ffn)).

    Scale: |x| + those of W_o and W_down (the residual carries the attention's error)."""
    a = rmsnorm(ctx, X, P["attn_norm.weight"], cfg.norm_eps)
    att, s_att = attention(
        ctx, a, P["attn.wq.weight"], P["attn.wk.weight"], P["attn.wv.weight"], P["attn.wo.weight"], cfg
    )
    h = X + att
    b = rmsnorm(ctx, h, P["ffn_norm.weight"], cfg.norm_eps)
    f, s_ffn = swiglu(ctx, b, P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"])
    return h + f, abs(X) + s_att + s_ffn


# ------------------------------------------------------------------------------------------------ VJPs
def rmsnorm_vjp(ctx: Any, X: Arr, w: Arr, eps: float, Gy: Arr) -> tuple[tuple[Arr, Arr], tuple[Arr, Arr]]:
    """Vector–Jacobian product of RMSNorm y = x·r·w, r = (Σx²/D + ε)^(−1/2), upstream gradient γ (rows of Gy):

    dx = r·(w ⊙ γ) − (r³/D)·x·Σ_j γ_j w_j x_j,   dw = Σ_rows γ ⊙ x · r.   → ((dx, scale), (dw, scale))."""
    D = X.shape[-1]
    dX, sX = np.empty_like(X), np.empty_like(X)
    dw, sw = np.full(D, ctx.mpf(0), dtype=object), np.full(D, ctx.mpf(0), dtype=object)
    for i in np.ndindex(X.shape[:-1]):
        x, g = X[i], Gy[i]
        r = _inv_sqrt(ctx, ctx.fdot(x, x) / D + eps)
        a, sa = ctx.fdot(g * w, x), ctx.fdot(abs(g * w), abs(x))
        dX[i] = r * w * g - r**3 / D * x * a
        sX[i] = abs(r * w * g) + r**3 / D * abs(x) * sa
        dw, sw = dw + g * x * r, sw + abs(g * x * r)
    return (dX, sX), (dw, sw)


def _outer(a: Arr, b: Arr) -> tuple[Arr, Arr]:
    """Σ_rows a ⊗ b for rows a (N, P), b (N, Q) → (P, Q), and its scale."""
    return a.T.dot(b), abs(a).T.dot(abs(b))


def swiglu_vjp(ctx: Any, X: Arr, Wg: Arr, Wu: Arr, Wd: Arr, Gy: Arr) -> tuple[tuple[Arr, Arr], ...]:
    """Vector–Jacobian product of SwiGLU for rows X (N, D), upstream gradient rows Gy (N, D). With g = W_gate x,
    u = W_up x, s = silu(g) = g·σ(g), h = s ⊙ u, y = W_down h:

    dh = W_downᵀ γ,  du = dh ⊙ s,  dg = dh ⊙ u ⊙ σ(g)(1 + g(1 − σ(g))),  dx = W_gateᵀ dg + W_upᵀ du,
    dW_gate = Σ_rows dg ⊗ x,  dW_up = Σ_rows du ⊗ x,  dW_down = Σ_rows γ ⊗ h.
    → (dx, dW_gate, dW_up, dW_down), each with its scale."""
    g, _ = linear(ctx, Wg, X)
    u, _ = linear(ctx, Wu, X)
    sig = elementwise(ctx, sigmoid, g)
    s = g * sig
    h = s * u
    dh, _ = linear(ctx, Wd.T, Gy)
    du = dh * s
    dg = dh * u * sig * (1 + g * (1 - sig))
    dx_gate, s_gate = linear(ctx, Wg.T, dg)
    dx_up, s_up = linear(ctx, Wu.T, du)
    return (dx_gate + dx_up, s_gate + s_up), _outer(dg, X), _outer(du, X), _outer(Gy, h)


# ------------------------------------------------------------------------------------------ AddRMSNorm
def add_rmsnorm(ctx: Any, X: Arr, R: Arr, w: Arr, eps: float) -> tuple[Arr, Arr]:
    """The residual add and the next pre-norm (vLLM's ``fused_add_rms_norm``) of each row: h = x + r and
    y = RMSNorm(h) = h / √(Σh²/D + ε) ⊙ w — the norm of the exact sum. → (y, h)."""
    H = X + R
    return rmsnorm(ctx, H, w, eps), H


def add_rmsnorm_vjp(ctx: Any, X: Arr, R: Arr, w: Arr, eps: float, Gy: Arr, Gh: Arr) -> tuple[tuple[Arr, Arr], ...]:
    """VJP of (y, h) = (RMSNorm(x + r), x + r) for upstream gradients (g_y, g_h): x and r receive the same gradient
    d = dx_RMSNorm(h; g_y) + g_h, and dw = dw_RMSNorm(h; g_y) (:func:`rmsnorm_vjp` at h).
    → ((d, scale), (dw, scale))."""
    (dX, sX), dw = rmsnorm_vjp(ctx, X + R, w, eps, Gy)
    return (dX + Gh, sX + abs(Gh)), dw
