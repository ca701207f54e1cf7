"""The golden engine's public API: each component assembled from its definition, its fast path and the framework.

* the mathematics, one short mpmath function per component: :mod:`golden.definitions`;
* the exact double-double fast paths (Ozaki splitting, certified sums, DD kernels): :mod:`golden.fast`;
* options, deadlines, input reading, evaluation order and self-validation: :mod:`golden.framework`.

Every function reads its inputs exactly (any float dtype, any device), checks their shapes, answers non-finite
inputs with the float64 evaluation of the formula (``info["certified"] = False``), and otherwise returns
:func:`golden.framework.evaluate`'s certified result. Keyword options of every function: ``method="auto"|"fast"|
"mpmath"``, ``validate="sample"|"full"|"none"``, ``prec=128``, ``tol_bits=100``, ``timeout=120`` (seconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from golden import definitions, fast
from golden.framework import (
    DEFAULT_PREC,
    DEFAULT_TIMEOUT,
    DEFAULT_TOL_BITS,
    Golden,
    GoldenError,
    GoldenPrecisionError,
    GoldenTimeoutError,
    Inputs,
    Opts,
    check_attention_shapes,
    check_last,
    check_same_shape,
    check_swiglu_shapes,
    evaluate,
    nonfinite,
    read,
    row_indices,
    scalar,
    select_rows,
)

__all__ = [
    "BLOCK_PARAMS",
    "DEFAULT_PREC",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOL_BITS",
    "Golden",
    "GoldenError",
    "GoldenPrecisionError",
    "GoldenTimeoutError",
    "add_rmsnorm",
    "add_rmsnorm_vjp",
    "attention",
    "block",
    "layernorm",
    "rmsnorm",
    "rmsnorm_vjp",
    "silu",
    "swiglu",
    "swiglu_vjp",
]

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


def _read(**named: Any) -> Inputs:
    """The exact values of the named inputs; ``.finite``: whether all are finite (:func:`golden.framework.read`)."""
    return read(named)


def rmsnorm(x: Any, weight: Any, eps: float, *, rows: Any = None, **opts: Any) -> Golden:
    """Golden RMSNorm: y = x / √(mean(x², −1) + ε) ⊙ w, exactly (x (..., D), w (D,), ε a float). With ``rows`` (row
    indices, every dimension of x but the last flattened row-major), the rows ``x[rows]`` only: shape (len(rows), D).
    """
    o = Opts(**opts)
    x = x if rows is None else select_rows(x, rows, "rmsnorm")
    X, w = inputs = _read(x=x, weight=weight)
    eps = scalar(eps, "eps")
    check_last(X, w, "rmsnorm", "weight")
    if not inputs.finite:
        with np.errstate(all="ignore"):
            X64 = X.astype(np.float64)
            return nonfinite("rmsnorm", X64 / np.sqrt(np.mean(X64**2, -1, keepdims=True) + eps) * w)
    return evaluate(
        "rmsnorm",
        ["rmsnorm"],
        o,
        (X, w),
        [X.shape],
        lambda stats, dl: fast.rmsnorm(X, w, eps, o, stats, dl),
        lambda ctx, X, w: [(definitions.rmsnorm(ctx, X, w, eps), None)],
        fast.in_range(X, w),
    )[0]


def layernorm(x: Any, weight: Any, bias: Any, eps: float, *, rows: Any = None, **opts: Any) -> Golden:
    """Golden LayerNorm: y = (x − μ)/√(Σ(x − μ)²/D + ε) ⊙ w + b, μ = Σx/D (biased variance), exactly; ``rows`` as
    for :func:`rmsnorm`."""
    o = Opts(**opts)
    x = x if rows is None else select_rows(x, rows, "layernorm")
    X, w, b = inputs = _read(x=x, weight=weight, bias=bias)
    eps = scalar(eps, "eps")
    check_last(X, w, "layernorm", "weight")
    check_last(X, b, "layernorm", "bias")
    if not inputs.finite:
        with np.errstate(all="ignore"):
            X64 = X.astype(np.float64)
            c = X64 - X64.mean(-1, keepdims=True)
            return nonfinite("layernorm", c / np.sqrt((c**2).mean(-1, keepdims=True) + eps) * w + b)
    return evaluate(
        "layernorm",
        ["layernorm"],
        o,
        (X, w, b),
        [X.shape],
        lambda stats, dl: fast.layernorm(X, w, b, eps, o, stats, dl),
        lambda ctx, X, w, b: [definitions.layernorm(ctx, X, w, b, eps)],
        fast.in_range(X, w, b),
    )[0]


def silu(z: Any, **opts: Any) -> Golden:
    """Golden SiLU (Swish-1): silu(z) = z / (1 + e^(−z)), elementwise, exactly."""
    o = Opts(**opts)
    (Z,) = inputs = _read(z=z)
    if not inputs.finite:
        with np.errstate(all="ignore"):
            Z64 = Z.astype(np.float64)
            return nonfinite("silu", Z64 / (1 + np.exp(-Z64)))
    return evaluate(
        "silu",
        ["silu"],
        o,
        (Z,),
        [Z.shape],
        lambda stats, dl: fast.silu(Z, o, stats, dl),
        lambda ctx, Z: [(definitions.elementwise(ctx, definitions.silu, Z), None)],
        fast.in_range(Z),
    )[0]


def swiglu(x: Any, w_gate: Any, w_up: Any, w_down: Any, *, rows: Any = None, **opts: Any) -> Golden:
    """Golden SwiGLU: y = W_down (silu(W_gate x) ⊙ W_up x), exactly; W_gate, W_up (F, D), W_down (D, F); ``rows`` as
    for :func:`rmsnorm`."""
    o = Opts(**opts)
    x = x if rows is None else select_rows(x, rows, "swiglu")
    X, Wg, Wu, Wd = inputs = _read(x=x, w_gate=w_gate, w_up=w_up, w_down=w_down)
    check_swiglu_shapes(X, Wg, Wu, Wd)
    if not inputs.finite:
        with np.errstate(all="ignore"):
            X64 = X.astype(np.float64)
            g, u = X64 @ Wg.T.astype(np.float64), X64 @ Wu.T.astype(np.float64)
            return nonfinite("swiglu", (g / (1 + np.exp(-g)) * u) @ Wd.T.astype(np.float64))
    return evaluate(
        "swiglu",
        ["swiglu"],
        o,
        (X, Wg, Wu, Wd),
        [X.shape],
        lambda stats, dl: fast.swiglu(X, Wg, Wu, Wd, o, stats, dl),
        lambda ctx, *a: [definitions.swiglu(ctx, *a)],
        fast.in_range(X, Wg, Wu, Wd),
    )[0]


def attention(x: Any, wq: Any, wk: Any, wv: Any, wo: Any, config: Any, *, rows: Any = None, **opts: Any) -> Golden:
    """Golden causal GQA attention with rotate-half RoPE (positions 0..T−1, base config.rope_theta, scale 1/√K).

    x (B, T, D); wq (H·K, D), wk, wv (G·K, D), wo (D, H·K) in nn.Linear layout; head h reads kv head h // (H/G).
    With ``rows`` (indices into the B·T positions, row-major) the outputs at those positions only, (len(rows), D).
    """
    o = Opts(**opts)
    idx = None if rows is None else row_indices(rows, np.shape(x), "attention")
    X, *Ws = inputs = _read(x=x, wq=wq, wk=wk, wv=wv, wo=wo)
    check_attention_shapes(X, *Ws, config)
    shape = X.shape if idx is None else (len(idx), X.shape[-1])
    if not inputs.finite:
        return nonfinite("attention", np.full(shape, np.nan))
    return evaluate(
        "attention",
        ["attention"],
        o,
        (X, *Ws),
        [shape],
        lambda stats, dl: fast.attention(X, tuple(Ws), config, o, stats, dl, idx),
        lambda ctx, X, *W: [_pick(definitions.attention(ctx, X, *W, config), idx)],
        fast.in_range(X, *Ws),
    )[0]


def block(x: Any, params: Mapping[str, Any], config: Any, *, rows: Any = None, **opts: Any) -> Golden:
    """Golden pre-norm Block: h = x + attn(RMSNorm(x)), out = h + SwiGLU(RMSNorm(h)), exactly (no rounding between).

    params: the contract's state_dict names (``BLOCK_PARAMS``); config: ModelConfig (norm_eps, rope_theta,
    n_heads, n_kv_heads). x (B, T, D). With ``rows`` (indices into the B·T positions, row-major) the outputs at
    those positions only, (len(rows), D): keys and values are computed at every position, the rest only there.
    """
    o = Opts(**opts)
    idx = None if rows is None else row_indices(rows, np.shape(x), "block")
    missing = [k for k in BLOCK_PARAMS if k not in params]
    if missing:
        raise KeyError(f"golden.block: params lack {missing}; expected the state_dict names {list(BLOCK_PARAMS)}")
    X, *Ps = inputs = _read(x=x, **{k: params[k] for k in BLOCK_PARAMS})
    P = dict(zip(BLOCK_PARAMS, Ps, strict=True))
    check_attention_shapes(X, *(P[f"attn.{n}.weight"] for n in ("wq", "wk", "wv", "wo")), config)
    check_swiglu_shapes(X, P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"])
    shape = X.shape if idx is None else (len(idx), X.shape[-1])
    if not inputs.finite:
        return nonfinite("block", np.full(shape, np.nan))
    return evaluate(
        "block",
        ["block"],
        o,
        (X, *P.values()),
        [shape],
        lambda stats, dl: fast.block(X, P, config, o, stats, dl, idx),
        lambda ctx, X, *p: [_pick(definitions.block(ctx, X, dict(zip(BLOCK_PARAMS, p, strict=True)), config), idx)],
        fast.in_range(X, *P.values()),
    )[0]


def _pick(value_scale: tuple[Any, Any], idx: np.ndarray | None) -> tuple[Any, Any]:
    """A definition's (value, scale) at the positions ``idx`` of its rows (all when None)."""
    if idx is None:
        return value_scale
    return tuple(np.asarray(a, dtype=object).reshape(-1, np.shape(a)[-1])[idx] for a in value_scale)


def rmsnorm_vjp(x: Any, weight: Any, eps: float, grad_out: Any, **opts: Any) -> tuple[Golden, Golden]:
    """Golden RMSNorm vector–Jacobian product for y = x·r·w, r = (Σx²/D + ε)^(-1/2), upstream gradient g:

    dx = r·(w ⊙ g) − (r³/D)·x·Σ_j(g_j w_j x_j),   dw = Σ_rows g ⊙ x · r.
    """
    o = Opts(**opts)
    X, w, G = inputs = _read(x=x, weight=weight, grad_out=grad_out)
    eps = scalar(eps, "eps")
    check_last(X, w, "rmsnorm_vjp", "weight")
    check_same_shape(G, X, "rmsnorm_vjp")
    if not inputs.finite:
        return nonfinite("rmsnorm_vjp.dx", np.full(X.shape, np.nan)), nonfinite(
            "rmsnorm_vjp.dw", np.full(w.shape, np.nan)
        )
    dx, dw = evaluate(
        "rmsnorm_vjp",
        ["rmsnorm_vjp.dx", "rmsnorm_vjp.dw"],
        o,
        (X, w, G),
        [X.shape, w.shape],
        lambda stats, dl: fast.rmsnorm_vjp(X, w, eps, G, o, stats, dl),
        lambda ctx, X, w, G: definitions.rmsnorm_vjp(ctx, X, w, eps, G),
        fast.in_range(X, w, G),
    )
    return dx, dw


def swiglu_vjp(
    x: Any, w_gate: Any, w_up: Any, w_down: Any, grad_out: Any, **opts: Any
) -> tuple[Golden, Golden, Golden, Golden]:
    """Golden SwiGLU vector–Jacobian product. With g = W_gate x, u = W_up x, s = silu(g), h = s ⊙ u, y = W_down h
    and upstream gradient γ: dh = W_downᵀ γ, dW_down = Σ_rows γ ⊗ h, du = dh ⊙ s,
    dg = dh ⊙ u ⊙ silu'(g) with silu'(z) = σ(z)(1 + z(1 − σ(z))), dx = W_gateᵀ dg + W_upᵀ du,
    dW_gate = Σ_rows dg ⊗ x, dW_up = Σ_rows du ⊗ x. Returns (dx, dW_gate, dW_up, dW_down).
    """
    o = Opts(**opts)
    X, Wg, Wu, Wd, Gy = inputs = _read(x=x, w_gate=w_gate, w_up=w_up, w_down=w_down, grad_out=grad_out)
    check_swiglu_shapes(X, Wg, Wu, Wd)
    check_same_shape(Gy, X, "swiglu_vjp")
    if not inputs.finite:
        nan = nonfinite("swiglu_vjp", np.full(X.shape, np.nan))
        return (nan, *(nonfinite("swiglu_vjp", np.full(W.shape, np.nan)) for W in (Wg, Wu, Wd)))
    rows, grads = X.reshape(-1, X.shape[-1]), Gy.reshape(-1, X.shape[-1])
    dx, dwg, dwu, dwd = evaluate(
        "swiglu_vjp",
        ["swiglu_vjp.dx", "swiglu_vjp.dw_gate", "swiglu_vjp.dw_up", "swiglu_vjp.dw_down"],
        o,
        (rows, Wg, Wu, Wd, grads),
        [X.shape, Wg.shape, Wu.shape, Wd.shape],
        lambda stats, dl: fast.swiglu_vjp(rows, Wg, Wu, Wd, grads, o, stats, dl),
        lambda ctx, *a: definitions.swiglu_vjp(ctx, *a),
        fast.in_range(X, Wg, Wu, Wd, Gy),
    )
    return dx, dwg, dwu, dwd


# ------------------------------------------------------------------------------------------ AddRMSNorm
def _read_pair(x: Any, residual: Any, weight: Any, name: str, rows: Any = None) -> Inputs:
    """The exact x, residual (the ``rows`` of each, if given) and weight, their shapes checked."""
    if rows is not None:
        x, residual = select_rows(x, rows, name), select_rows(residual, rows, name)
    inputs = _read(x=x, residual=residual, weight=weight)
    X, R, w = inputs
    if R.shape != X.shape:
        raise ValueError(f"golden.{name}: residual shape {R.shape} != x shape {X.shape}")
    check_last(X, w, name, "weight")
    return inputs


def add_rmsnorm(
    x: Any, residual: Any, weight: Any, eps: float, *, rows: Any = None, **opts: Any
) -> tuple[Golden, Golden]:
    """Golden AddRMSNorm: (y, h) with h = x + r and y = h / √(mean(h², −1) + ε) ⊙ w of that exact sum (x, r (..., D)
    of one shape, w (D,), ε a float; ``rows`` as for :func:`rmsnorm`). ``h.rounded(dtype)`` is the sum correctly
    rounded to dtype."""
    o = Opts(**opts)
    inputs = _read_pair(x, residual, weight, "add_rmsnorm", rows)
    X, R, w = inputs
    eps = scalar(eps, "eps")
    if not inputs.finite:
        with np.errstate(all="ignore"):
            H = X.astype(np.float64) + R.astype(np.float64)
            Y = H / np.sqrt(np.mean(H**2, -1, keepdims=True) + eps) * w
        return nonfinite("add_rmsnorm.y", Y), nonfinite("add_rmsnorm.h", H)
    y, h = evaluate(
        "add_rmsnorm",
        ["add_rmsnorm.y", "add_rmsnorm.h"],
        o,
        (X, R, w),
        [X.shape, X.shape],
        lambda stats, dl: fast.add_rmsnorm(X, R, w, eps, o, stats, dl),
        lambda ctx, X, R, w: [(v, None) for v in definitions.add_rmsnorm(ctx, X, R, w, eps)],
        fast.in_range(X, R, w),
    )
    return y, h


def add_rmsnorm_vjp(
    x: Any, residual: Any, weight: Any, eps: float, grad_y: Any, grad_h: Any, **opts: Any
) -> tuple[Golden, Golden]:
    """Golden AddRMSNorm vector–Jacobian product for upstream gradients g_y (of y) and g_h (of h): x and the residual
    receive one gradient, d = r·(w ⊙ g_y) − (r³/D)·h·Σ_j(g_y,j w_j h_j) + g_h at the exact sum h = x + r, and
    dw = Σ_rows g_y ⊙ h · r. → (d, dw)."""
    o = Opts(**opts)
    inputs = _read_pair(x, residual, weight, "add_rmsnorm_vjp")
    X, R, w = inputs
    cotangents = _read(grad_y=grad_y, grad_h=grad_h)
    Gy, Gh = cotangents
    eps = scalar(eps, "eps")
    check_same_shape(Gy, X, "add_rmsnorm_vjp")
    check_same_shape(Gh, X, "add_rmsnorm_vjp")
    if not (inputs.finite and cotangents.finite):
        nan = np.full(X.shape, np.nan)
        return nonfinite("add_rmsnorm_vjp.d", nan), nonfinite("add_rmsnorm_vjp.dw", np.full(w.shape, np.nan))
    d, dw = evaluate(
        "add_rmsnorm_vjp",
        ["add_rmsnorm_vjp.d", "add_rmsnorm_vjp.dw"],
        o,
        (X, R, w, Gy, Gh),
        [X.shape, w.shape],
        lambda stats, dl: fast.add_rmsnorm_vjp(X, R, w, eps, Gy, Gh, o, stats, dl),
        lambda ctx, X, R, w, Gy, Gh: definitions.add_rmsnorm_vjp(ctx, X, R, w, eps, Gy, Gh),
        fast.in_range(X, R, w, Gy, Gh),
    )
    return d, dw
