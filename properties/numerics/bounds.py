"""Derived error bounds: for each component, the allowed |actual − golden| per output element.

Every bound is a *first-order forward error analysis* evaluated on the actual data, from the unit
roundoffs u_t of the storage dtype t (inputs, weights, output) and u_c of the compute dtype c
(c = fp32 for fp16/bf16, else c = t) and the shapes (D, F, K, T). It covers every *accepted convention*
at once:

(a) compute in c, round once to t (the reference, torch ``F.rms_norm``, Gemma, fused kernels);
(b) HF-Llama RMSNorm: (x_c·r).to(t) then × w in t — two roundings to t;
(c) HF/torch SwiGLU and attention in t: every linear output, silu, product, RoPE product and sum, scores,
    probabilities, attention output and residual sum rounded to t (GEMMs accumulate in ≥ fp32);
(d) float64 maths (t = c = fp64);
(e) any pairwise / blocked / BLAS summation order.

How (one scheme for all components). Each intermediate value v carries two first-order error measures:

* e₁ — the deterministic worst case: Σ of |sensitivity| × |local error| over every rounding (Higham's
  componentwise analysis). A reduction (torch sum/mean: pairwise/cascade) of n terms errs by at most
  (⌈log2 n⌉ + 2)·u_c·Σ|p_k|; a GEMM dot product accumulated in runs of m = min(n, 384) sequential FMAs
  (OpenBLAS/MKL blocking) by (m + ⌈n/m⌉)·u_c·Σ|p_k| (see ``_dot_consts``).
* e₂ — the probabilistic model of Higham & Mary ("A new approach to probabilistic rounding error
  analysis", SISC 2019): rounding errors of distinct operations are independent, mean-zero and bounded by
  u|result|, so their first-order contributions add in quadrature. With |δ| ≤ b_k independent,
  Hoeffding gives |Σ c_k δ_k| ≤ λ·√(Σ c_k² b_k²) with probability ≥ 1 − 2·exp(−λ²/2). For a sum the node
  errors δ_node·s_node give Σ_node s_node²: for blocked accumulation (m/2 + n/(2m))·Σp_k² for random signs
  plus (m²/(3n) + n/(3m))·s² for a common bias (partial sums grow linearly); GPU MMA chains (sequential
  over n/16 chunks) are covered by the floors n/32 and n/48.

Underflow: every operation in c may also err by the smallest normal of c (flush-to-zero included: torch's
vectorised CPU exp flushes subnormal results), every rounding to t by half its subnormal spacing.

The pre-rounding error allowed is δ = min(e₁, λ·√e₂) with **λ = 6** (failure probability ≤ 2e⁻¹⁸ ≈ 3·10⁻⁸
per element under the model; the deterministic e₁ is always a valid first-order bound, so the minimum
never admits more than the worst case). The final rounding to t then adds half a ULP at the rounded
value: ``abs = δ + ½·ulp_t(|y| + δ)``; ``ulps = abs / ulp_t(y)``. Where an accepted convention would
overflow t in an intermediate, the bound of that row is +inf (the overflow is the convention's, not a bug).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from properties.numerics import ulp as _ulp

__all__ = [
    "LAMBDA",
    "Bound",
    "accuracy_class",
    "attention",
    "block",
    "compute_dtype",
    "rmsnorm",
    "rmsnorm_vjp",
    "silu",
    "swiglu",
    "swiglu_vjp",
]

LAMBDA = 6.0  # Higham–Mary confidence parameter: P(model bound exceeded) ≤ 2·exp(−λ²/2) per element


@dataclasses.dataclass(frozen=True)
class Bound:
    """Allowed error per output element: ``abs`` (absolute) and ``ulps`` (in ULPs of dtype at the golden value).

    ``formula`` is printed in failure messages: the formula with its symbols and the numbers substituted.
    ``overflow`` marks elements whose bound is +inf because an accepted convention overflows t in an
    intermediate (there a non-finite output, NaN included, is the convention's, not a bug).
    """

    abs: np.ndarray
    ulps: np.ndarray
    formula: str
    component: str = ""
    dtype: torch.dtype | None = None
    overflow: np.ndarray | None = None  # True where an accepted convention overflows t in an intermediate

    @property
    def max_ulps(self) -> float:
        finite = self.ulps[np.isfinite(self.ulps)] if self.ulps.size else self.ulps
        return float(finite.max()) if finite.size else float("inf") if self.ulps.size else 0.0

    @property
    def accuracy(self) -> str:
        """The accuracy class this bound guarantees (from its largest ULP allowance)."""
        return accuracy_class(self.max_ulps)

    def __str__(self) -> str:
        return self.formula


def accuracy_class(max_ulp: float) -> str:
    """ "correctly rounded" (≤ 0.5 ULP) | "faithful" (< 1 ULP) | "≤ k ULP" (k rounded up to 2 significant digits)."""
    if not math.isfinite(max_ulp):
        return "unbounded"
    if max_ulp <= 0.5:
        return "correctly rounded"
    if max_ulp < 1.0:
        return "faithful"
    k = math.ceil(max_ulp * 10) / 10 if max_ulp < 10 else float(math.ceil(max_ulp))
    return f"≤ {k:g} ULP"


def compute_dtype(dtype: Any) -> torch.dtype:
    """c: fp32 for fp16/bf16 storage, else the storage dtype itself."""
    t = _ulp.as_torch_dtype(dtype)
    return torch.float32 if t in (torch.float16, torch.bfloat16) else t


_NAMES = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


# -------------------------------------------------------------------------------- error propagation
@dataclasses.dataclass
class _P:
    """Precisions of one evaluation: storage t, compute c."""

    t: torch.dtype

    @property
    def c(self) -> torch.dtype:
        return compute_dtype(self.t)

    @property
    def ut(self) -> float:
        return _ulp.unit_roundoff(self.t)

    @property
    def uc(self) -> float:
        return _ulp.unit_roundoff(self.c)

    @property
    def narrow(self) -> bool:
        return self.t != self.c

    @property
    def tiny_t(self) -> float:
        """Half the subnormal spacing of t: the absolute error of a rounding to t in the subnormal range."""
        return float(_ulp.ulp(np.zeros(1), self.t)[0]) / 2

    @property
    def tiny_c(self) -> float:
        """The smallest normal of c: the absolute error of an operation in c that underflows, flush-to-zero
        included (torch's vectorised CPU exp and GPU fast paths flush subnormal results)."""
        return float(torch.finfo(self.c).smallest_normal)

    @property
    def max_t(self) -> float:
        return float(torch.finfo(self.t).max)


@dataclasses.dataclass
class _E:
    """A value with its first-order error measures: e1 (worst case) and e2 (sum of squared independent bounds)."""

    v: np.ndarray
    e1: np.ndarray
    e2: np.ndarray

    @staticmethod
    def exact(v: np.ndarray) -> _E:
        v = np.asarray(v, dtype=np.float64)
        return _E(v, np.zeros_like(v), np.zeros_like(v))


def _depth(n: int) -> int:
    """⌈log2 n⌉ + 2: the pairwise/cascade error constant of an n-term reduction (torch sum/mean, see above)."""
    return math.ceil(math.log2(max(n, 1))) + 2


BLAS_BLOCK = 384  # m: the longest sequential (FMA) accumulation run of a blocked GEMM (OpenBLAS/MKL kc ≤ 384)


def _dot_consts(n: int) -> tuple[float, float, float]:
    """Constants of an n-term dot product accumulated by a blocked GEMM (runs of m = min(n, 384) sequential FMAs,
    then the ⌈n/m⌉ block sums in sequence) or by a GEMV / GPU MMA chain (sequential in ≥ 4 lanes):

    * worst case: |error| ≤ k1·u_c·Σ|p_k|, k1 = max(m + ⌈n/m⌉, ⌈n/4⌉ + 2) (sequential depth of the order)
    * quadrature: Σ_nodes s_node² ≈ (m/2 + n/(2m))·Σp_k² (random signs)
                                   + (m²/(3n) + n/(3m))·s²  (a common bias μ = s/n: partial sums k·μ)
      with floors n/8 and n/12: a GEMV accumulating sequentially in 4 SIMD lanes (measured: torch's fp64
      (4 × 1024) @ (1024 × 2816) reaches 0.7 of the bound without the floor)
      → e₂ = u_c²·(k2·Σp_k² + k3·s²)
    """
    m = max(1, min(n, BLAS_BLOCK))
    k1 = max(m + math.ceil(n / m), math.ceil(n / 4) + 2)
    k2 = max(m / 2 + n / (2 * m), n / 8)
    k3 = max(m * m / (3 * n) + n / (3 * m), n / 12)
    return float(k1), float(k2), float(k3)


def _round(a: _E, u: float, tiny: float = 0.0) -> _E:
    """One rounding with unit roundoff u (and absolute error ≤ tiny in the subnormal range)."""
    loc = u * np.abs(a.v) + tiny
    return _E(a.v, a.e1 + loc, a.e2 + loc**2)


def _op(a: _E, p: _P, k: float = 1.0) -> _E:
    """k roundings in the compute precision c (each ≤ u_c·|v|, or half a subnormal spacing when it underflows)."""
    return _round(a, k * p.uc, k * p.tiny_c)


def _to_t(a: _E, p: _P) -> _E:
    """An accepted convention may round this intermediate to t (a no-op when t = c: already counted in c)."""
    return _round(a, p.ut, p.tiny_t) if p.narrow else a


def _mul(a: _E, b: _E) -> _E:
    return _E(a.v * b.v, np.abs(b.v) * a.e1 + np.abs(a.v) * b.e1, b.v**2 * a.e2 + a.v**2 * b.e2)


def _add(a: _E, b: _E) -> _E:
    return _E(a.v + b.v, a.e1 + b.e1, a.e2 + b.e2)


def _fn(a: _E, value: np.ndarray, deriv: np.ndarray) -> _E:
    """y = f(a) with |f'(a)| = deriv (first order)."""
    d = np.abs(deriv)
    return _E(value, d * a.e1, d**2 * a.e2)


def _contract(a: _E, b: _E, spec: str, n: int, p: _P) -> _E:
    """y = einsum(spec, a, b) summing n products, computed in c (pairwise/blocked): propagated + own errors."""
    ein = np.einsum
    v = ein(spec, a.v, b.v)
    absa, absb = np.abs(a.v), np.abs(b.v)
    k1, k2, k3 = _dot_consts(n)
    e1 = ein(spec, a.e1, absb) + ein(spec, absa, b.e1) + k1 * p.uc * ein(spec, absa, absb) + 2 * n * p.tiny_c
    sq = ein(spec, a.v**2, b.v**2)
    e2 = ein(spec, a.e2, b.v**2) + ein(spec, a.v**2, b.e2) + p.uc**2 * (k2 * sq + k3 * v**2) + 4 * n * p.tiny_c**2
    return _E(v, e1, e2)


def _linear(a: _E, W: np.ndarray, p: _P) -> _E:
    """y = a Wᵀ (nn.Linear), accumulated in c, then possibly rounded to t."""
    n = W.shape[1]
    v = a.v @ W.T
    aW = np.abs(W)
    W2 = W**2
    k1, k2, k3 = _dot_consts(n)
    e1 = a.e1 @ aW.T + k1 * p.uc * (np.abs(a.v) @ aW.T) + 2 * n * p.tiny_c  # + underflow of products and sums
    e2 = a.e2 @ W2.T + p.uc**2 * (k2 * ((a.v**2) @ W2.T) + k3 * v**2) + 4 * n * p.tiny_c**2
    return _to_t(_E(v, e1, e2), p)


def _rmsnorm_e(x: _E, w: np.ndarray, eps: float, p: _P) -> tuple[_E, np.ndarray]:
    """RMSNorm in c with the (a)/(b) conventions; returns (y, r). x may carry errors (Jacobian propagation)."""
    D = x.v.shape[-1]
    xv = x.v
    S = np.sum(xv**2, axis=-1, keepdims=True)
    ms = S / D
    v = ms + eps
    with np.errstate(all="ignore"):
        r = 1.0 / np.sqrt(v)
        rho = np.where(v > 0, ms / v, 0.0)  # sensitivity of r to a relative error of the mean square
    # relative error of r: ½(sum of squares γ_D + 1/D scaling)·ρ + ½(eps rounded to c + the add) + rsqrt (2 u_c)
    rel_r = 0.5 * (_depth(D) * p.uc) * rho + 0.5 * p.uc * (1 + (1 - rho)) + 2 * p.uc
    with np.errstate(all="ignore"):
        y = xv * r * w
    ay = np.abs(y)
    # own rounding: x·r (u_c), ·w (u_c); conventions (b): x·r rounded to t, then ·w rounded (final rounding separate)
    own1 = (
        (rel_r + 2 * p.uc) * ay
        + 2 * p.tiny_c * (1 + np.abs(w))
        + ((p.ut * ay + p.tiny_t * np.abs(w)) if p.narrow else 0.0)
    )
    own2 = own1**2  # the row-common r error is coherent within the row: keep it as one source per element
    # propagated input error: ∂y_i/∂x_j = r w_i (δ_ij − x_i x_j r²/D)
    with np.errstate(all="ignore"):
        c1 = np.sum(np.abs(xv) * x.e1, axis=-1, keepdims=True) * r**2 / D
        c2 = np.sum(xv**2 * x.e2, axis=-1, keepdims=True) * r**4 / D**2
        e1 = np.abs(r * w) * (x.e1 + np.abs(xv) * c1) + own1
        e2 = (r * w) ** 2 * (x.e2 + xv**2 * c2) + own2
    return _E(y, np.nan_to_num(e1, nan=np.inf), np.nan_to_num(e2, nan=np.inf)), r


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
    under = 2 * np.abs(g.v) * p.tiny_c  # e^(−|z|) may underflow (or flush) in c: silu off by ≤ |z|·tiny_c
    s_e = _E(s_e.v, s_e.e1 + under, s_e.e2 + under**2)
    return _to_t(s_e, p), sig


def _swiglu_e(x: _E, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray, p: _P) -> tuple[_E, dict[str, Any]]:
    g = _linear(x, Wg, p)
    u = _linear(x, Wu, p)
    s, sig = _silu_e(g, p)
    h = _to_t(_op(_mul(s, u), p), p)
    y = _linear(h, Wd, p)
    return y, {"g": g, "u": u, "s": s, "sig": sig, "h": h}


def _finish(
    y: _E,
    p: _P,
    component: str,
    formula_core: str,
    shape_note: str,
    overflow: np.ndarray | None = None,
    golden_value: np.ndarray | None = None,
) -> Bound:
    """δ = min(e1, λ√e2); abs = δ + ½·ulp_t(|y| + δ); ulps at the golden value."""
    with np.errstate(all="ignore"):
        delta = np.minimum(y.e1, LAMBDA * np.sqrt(y.e2))
        delta = np.where(np.isnan(delta), np.inf, delta)
        yv = y.v if golden_value is None else golden_value
        spacing_out = _ulp.ulp(np.abs(yv) + np.where(np.isfinite(delta), delta, 0.0), p.t)
        spacing_y = _ulp.ulp(yv, p.t)
        ab = delta + 0.5 * spacing_out  # (½·2^-1074 underflows to 0 in float64: ulps below is computed apart)
        ulps = delta / spacing_y + 0.5 * (spacing_out / spacing_y)
        if overflow is not None:
            ab = np.where(overflow, np.inf, ab)
            ulps = np.where(overflow, np.inf, ulps)
    mx = float(np.max(ulps[np.isfinite(ulps)])) if np.isfinite(ulps).any() else float("inf")
    formula = (
        f"{formula_core} = max {mx:.4g} ULP ({accuracy_class(mx)}) "
        f"[{component}, t={_NAMES[p.t]}, c={_NAMES[p.c]}, {shape_note}]"
    )
    ov = None if overflow is None else np.broadcast_to(np.asarray(overflow, dtype=bool), ab.shape).copy()
    return Bound(ab, ulps, formula, component, p.t, ov)


def _exact(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().to("cpu", torch.float64).numpy()
    return np.asarray(t, dtype=np.float64)


def _row_overflow(vals: list[np.ndarray], p: _P, rows: tuple[int, ...]) -> np.ndarray:
    """Rows (leading shape ``rows``) where an intermediate exceeds t's range (an accepted convention overflows)."""
    out = np.zeros(rows, dtype=bool)
    for v in vals:
        big = np.abs(v) > p.max_t
        out |= big.reshape(*rows, -1).any(axis=-1)
    return out


# ---------------------------------------------------------------------------------------- RMSNorm
def rmsnorm(x: Any, weight: Any, eps: float, dtype: Any) -> Bound:
    """Bound for RMSNorm y = x·r·w, r = (Σx²/D + ε)^(-1/2), output in dtype t (compute in c).

    Derivation (first order, relative to |y_i|): the positive sum Σx² in c errs by ≤ (⌈log2 D⌉ + 2)·u_c
    (pairwise/blocked); r = (S/D + ε)^(-1/2) halves it and scales it by ρ = ms/(ms + ε) ≤ 1 (ε-dominated
    rows are insensitive); ε rounded to c and the addition add ½u_c(2 − ρ); rsqrt (or 1/√) 2u_c; x·r and ·w
    one u_c each. Convention (b) rounds x·r to t: + u_t·|y| (t ≠ c). The final rounding: ½ ULP.

        |ŷ − y| ≤ [½(⌈log2 D⌉+2)ρ + ½(2 − ρ) + 4]·u_c·|y| + [t ≠ c]·u_t·|y| + ½·ulp_t(|y| + δ)
    """
    p = _P(_ulp.as_torch_dtype(dtype))
    X, w = _exact(x), _exact(weight)
    D = X.shape[-1]
    y, _ = _rmsnorm_e(_E.exact(X), w, float(eps), p)
    two = f" + u_{_NAMES[p.t]}·|y| (HF: x·r rounded to {_NAMES[p.t]})" if p.narrow else ""
    core = (
        f"0.5 + [½(⌈log2 D⌉+2)ρ + ½(2−ρ) + 4]·u_{_NAMES[p.c]}·|y|{two} "
        f"= 0.5 + {(0.5 * _depth(D) + 5) * p.uc / p.ut:.3g}·|y|/ulp_t" + (" + |y|/ulp_t" if p.narrow else "")
    )
    ov = _row_overflow([y.v], p, X.shape[:-1])[..., None] & np.ones(X.shape, dtype=bool)
    return _finish(y, p, "rmsnorm", core, f"D={D}", overflow=ov)


def rmsnorm_vjp(x: Any, weight: Any, eps: float, grad_out: Any, dtype: Any) -> tuple[Bound, Bound]:
    """Bounds for the RMSNorm VJP: dx = r·w⊙g − (r³/D)·x·A, A = Σ_j g_j w_j x_j;  dw = Σ_rows g⊙x·r.

    Derivation: autograd in c (or in t for HF's bf16 multiply: the products g·w and g·(x·r) may be rounded
    to t); r carries the forward relative error (see :func:`rmsnorm`), r³ three times it; A is a D-term dot
    product (γ_D, quadrature model); the two terms of dx are bounded separately (they may cancel); dw sums
    N rows (γ_N). Final rounding ½ ULP each.
    """
    p = _P(_ulp.as_torch_dtype(dtype))
    X, w, G = _exact(x), _exact(weight), _exact(grad_out)
    D = X.shape[-1]
    xs = _E.exact(X)
    S = np.sum(X**2, axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        v = S / D + eps
        r = 1.0 / np.sqrt(v)
        rho = np.where(v > 0, (S / D) / v, 0.0)
    rel_r = 0.5 * _depth(D) * p.uc * rho + 0.5 * p.uc * (2 - rho) + 2 * p.uc
    r_e = _E(r, rel_r * r, (rel_r * r) ** 2)
    gw = _to_t(_op(_mul(_E.exact(G), _E.exact(w)), p), p)
    A = _contract(gw, xs, "...j,...j->...", D, p)
    A = _E(A.v[..., None], A.e1[..., None], A.e2[..., None])
    r3 = _op(_mul(_mul(r_e, r_e), r_e), p, 2)
    term1 = _op(_mul(r_e, gw), p)
    coef = _op(_mul(r3, A), p, 2)
    term2 = _op(_mul(coef, xs), p)
    term2 = _E(term2.v / D, term2.e1 / D, term2.e2 / D**2)
    dx = _to_t(_op(_E(term1.v - term2.v, term1.e1 + term2.e1, term1.e2 + term2.e2), p), p)
    xr = _to_t(_op(_mul(xs, r_e), p), p)
    gxr = _to_t(_op(_mul(_E.exact(G), xr), p), p)
    N = int(np.prod(X.shape[:-1]))
    flat = _E(gxr.v.reshape(-1, D), gxr.e1.reshape(-1, D), gxr.e2.reshape(-1, D))
    dw = _contract(flat, _E.exact(np.ones(flat.v.shape[0])), "nd,n->d", max(N, 1), p)
    core = "0.5 + min(e₁, λ√e₂), λ=6: first-order propagation of u_c, u_t roundings through dx = r·w⊙g − r³/D·x·A"
    return (
        _finish(dx, p, "rmsnorm_vjp.dx", core, f"D={D}"),
        _finish(dw, p, "rmsnorm_vjp.dw", "0.5 + min(e₁, λ√e₂), λ=6: Σ_rows g⊙x·r with γ_N", f"D={D}, N={N}"),
    )


# ----------------------------------------------------------------------------------------- SwiGLU
def swiglu(x: Any, w_gate: Any, w_up: Any, w_down: Any, dtype: Any) -> Bound:
    """Bound for SwiGLU y = W_d h, h = silu(g)⊙u, g = W_g x, u = W_u x, output in t.

    Derivation (first order, per output j): with e(v) the error measures of an intermediate,
      e(g) = γ_D-term of the D-products (accumulated in c) + [t≠c]·u_t|g|   (the same for u),
      e(s) = |silu'(g)|·e(g) + 4u_c|s| + [t≠c]·u_t|s|,   silu'(z) = σ(z)(1 + z(1 − σ(z))),
      e(h) = |u|·e(s) + |s|·e(u) + u_c|h| + [t≠c]·u_t|h|,
      e(y) = Σ_k |W_d,jk|·e(h_k) (worst case e₁) or √Σ_k W_d,jk²·e₂(h_k) (quadrature e₂) + γ_F-term,
    then δ = min(e₁, λ√e₂), λ = 6, and ½ ULP for the final rounding (see the module docstring).
    """
    p = _P(_ulp.as_torch_dtype(dtype))
    X, Wg, Wu, Wd = _exact(x), _exact(w_gate), _exact(w_up), _exact(w_down)
    D, F = X.shape[-1], Wg.shape[0]
    X2 = X.reshape(-1, D)
    y, t = _swiglu_e(_E.exact(X2), Wg, Wu, Wd, p)
    ov = _row_overflow([t["g"].v, t["u"].v, t["h"].v, y.v], p, (X2.shape[0],))
    y = _E(y.v.reshape(*X.shape[:-1], D), y.e1.reshape(*X.shape[:-1], D), y.e2.reshape(*X.shape[:-1], D))
    ov = np.broadcast_to(ov.reshape(*X.shape[:-1], 1), y.v.shape)
    core = (
        f"0.5 + min(e₁, λ√e₂), λ={LAMBDA:g}; e from γ_D=(⌈log2 D⌉+2)u_c, γ_F=(⌈log2 F⌉+2)u_c, silu 4u_c, "
        f"roundings of g,u,silu,h to t (u_t={p.ut:.3g}, u_c={p.uc:.3g})"
    )
    return _finish(y, p, "swiglu", core, f"D={D}, F={F}", overflow=ov)


def silu(z: Any, dtype: Any) -> Bound:
    """Bound for SiLU s = z·σ(z) evaluated in c: (exp, add, divide, multiply) ≤ 4u_c·|s| (the condition number
    |1 + z(1 − σ(z))| only matters for errors *in* z, which is exact here); convention z * sigmoid(z) in t rounds
    σ(z) to t first: + u_t·|s| (t ≠ c); ½ ULP for the final rounding. A formula that cancels
    (1 − 1/(1 + e^z) for z ≪ 0) exceeds it.
    """
    p = _P(_ulp.as_torch_dtype(dtype))
    Z = _exact(z)
    s, _ = _silu_e(_E.exact(Z), _P(p.c))
    if p.narrow:  # σ(z) rounded to t before the product (z·sigmoid(z) in t): |z|·(u_t·σ + subnormal half-spacing)
        loc = p.ut * np.abs(s.v) + np.abs(Z) * p.tiny_t
        s = _E(s.v, s.e1 + loc, s.e2 + loc**2)
    two = f" + u_{_NAMES[p.t]}·|silu(z)| + |z|·ulp_t(0)/2 (σ rounded to t)" if p.narrow else ""
    return _finish(s, p, "silu", f"0.5 + 4·u_{_NAMES[p.c]}·|silu(z)|{two}", f"n={Z.size}")


def swiglu_vjp(x: Any, w_gate: Any, w_up: Any, w_down: Any, grad_out: Any, dtype: Any) -> tuple[Bound, ...]:
    """Bounds for the SwiGLU VJP (dx, dW_gate, dW_up, dW_down), same scheme as :func:`swiglu`:

    dh = W_dᵀγ, dW_d = Σ_rows γ⊗h, du = dh⊙s, dg = dh⊙u⊙silu'(g), dx = W_gᵀdg + W_uᵀdu,
    dW_g = Σ_rows dg⊗x, dW_u = Σ_rows du⊗x; every product/linear output may be rounded to t, silu' costs
    5u_c and carries |silu''(g)|·e(g), silu''(z) = σ(1−σ)(2 + z(1 − 2σ)).
    """
    p = _P(_ulp.as_torch_dtype(dtype))
    X, Wg, Wu, Wd, Gy = (_exact(a) for a in (x, w_gate, w_up, w_down, grad_out))
    D, F = X.shape[-1], Wg.shape[0]
    X2, G2 = X.reshape(-1, D), Gy.reshape(-1, D)
    N = X2.shape[0]
    xs, gy = _E.exact(X2), _E.exact(G2)
    _, t = _swiglu_e(xs, Wg, Wu, Wd, p)
    g, u, s, sig, h = t["g"], t["u"], t["s"], t["sig"], t["h"]
    dh = _linear(gy, Wd.T, p)
    du = _to_t(_op(_mul(dh, s), p), p)
    d1 = sig * (1 + g.v * (1 - sig))
    d2 = sig * (1 - sig) * (2 + g.v * (1 - 2 * sig))
    ds = _op(_fn(g, d1, d2), p, 5.0)
    dg = _to_t(_op(_mul(_to_t(_op(_mul(dh, u), p), p), ds), p), p)
    dx = _to_t(_op(_add(_linear(dg, Wg.T, p), _linear(du, Wu.T, p)), p), p)
    dWg = _to_t(_contract(dg, xs, "nf,nd->fd", N, p), p)
    dWu = _to_t(_contract(du, xs, "nf,nd->fd", N, p), p)
    dWd = _to_t(_contract(gy, h, "nd,nf->df", N, p), p)
    dx = _E(dx.v.reshape(X.shape), dx.e1.reshape(X.shape), dx.e2.reshape(X.shape))
    core = f"0.5 + min(e₁, λ√e₂), λ={LAMBDA:g}; first-order propagation through the SwiGLU backward graph"
    note = f"D={D}, F={F}, N={N}"
    return tuple(
        _finish(e, p, f"swiglu_vjp.{n}", core, note)
        for n, e in (("dx", dx), ("dw_gate", dWg), ("dw_up", dWu), ("dw_down", dWd))
    )


# -------------------------------------------------------------------------------- attention, Block
def _rope_e(q: _E, T: int, K: int, theta: float, p: _P) -> _E:
    """q' = q⊙cos + rotate_half(q)⊙sin. Angles t·θ^(−2i/K) computed in c: |Δangle| ≤ 4u_c·t·ω_i (pow, divide,
    multiply); cos/sin in c (+u_c) and possibly rounded to t (HF); both products and the sum possibly rounded to t.
    """
    i = np.arange(K // 2)
    freq = theta ** (-2.0 * i / K)
    ang = np.arange(T)[:, None] * np.concatenate([freq, freq])[None, :]  # (T, K)
    cos, sin = np.cos(ang), np.sin(ang)
    dang = 4 * p.uc * ang + p.uc  # angle error plus the cos/sin evaluation error, as an absolute error
    shape = (1, T, 1, K)
    cos_e = _to_t(_E(cos.reshape(shape), dang.reshape(shape), dang.reshape(shape) ** 2), p)
    sin_e = _to_t(_E(sin.reshape(shape), dang.reshape(shape), dang.reshape(shape) ** 2), p)
    half = K // 2
    rot = _E(
        np.concatenate([-q.v[..., half:], q.v[..., :half]], -1),
        np.concatenate([q.e1[..., half:], q.e1[..., :half]], -1),
        np.concatenate([q.e2[..., half:], q.e2[..., :half]], -1),
    )
    a = _to_t(_op(_mul(q, cos_e), p), p)
    b = _to_t(_op(_mul(rot, sin_e), p), p)
    return _to_t(_op(_add(a, b), p), p)


def _attention_e(a: _E, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray, wo: np.ndarray, cfg: Any, p: _P) -> _E:
    B, T, D = a.v.shape
    H, G = cfg.n_heads, cfg.n_kv_heads
    K = D // H
    rep = H // G

    def heads(e: _E, n: int) -> _E:
        return _E(*(arr.reshape(B, T, n, K) for arr in (e.v, e.e1, e.e2)))

    q = _rope_e(heads(_linear(a, wq, p), H), T, K, float(cfg.rope_theta), p)
    k = _rope_e(heads(_linear(a, wk, p), G), T, K, float(cfg.rope_theta), p)
    v = heads(_linear(a, wv, p), G)

    def rep_kv(e: _E) -> _E:
        return _E(*(np.repeat(arr, rep, axis=2) for arr in (e.v, e.e1, e.e2)))

    k, v = rep_kv(k), rep_kv(v)
    sc = _contract(q, k, "bthj,bshj->bhts", K, p)
    inv = 1.0 / math.sqrt(K)
    sc = _to_t(_op(_to_t(_E(sc.v * inv, sc.e1 * inv, sc.e2 * inv**2), p), p), p)  # matmul → t, × scale → t
    causal = np.tril(np.ones((T, T), dtype=bool))
    s = np.where(causal, sc.v, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    ex = np.where(causal, np.exp(s - m), 0.0)
    prob = ex / ex.sum(axis=-1, keepdims=True)
    # softmax: Δp_t = p_t(Δs_t − Σ_s p_s Δs_s); own error in c: exp, sum (γ_T), divide
    e1s = np.where(causal, sc.e1, 0.0)
    e2s = np.where(causal, sc.e2, 0.0)
    pe1 = prob * (e1s + np.sum(prob * e1s, axis=-1, keepdims=True))
    pe2 = prob**2 * (e2s + np.sum(prob**2 * e2s, axis=-1, keepdims=True))
    own = (_depth(T) + 3) * p.uc * prob
    pr = _to_t(_E(prob, pe1 + own, pe2 + own**2), p)
    o = _to_t(_contract(pr, v, "bhts,bshj->bthj", T, p), p)
    o = _E(*(arr.reshape(B, T, H * K) for arr in (o.v, o.e1, o.e2)))
    return _linear(o, wo, p)


def attention(x: Any, wq: Any, wk: Any, wv: Any, wo: Any, config: Any, dtype: Any) -> Bound:
    """Bound for causal GQA attention with RoPE (see :func:`block` for the conventions covered)."""
    p = _P(_ulp.as_torch_dtype(dtype))
    X = _exact(x)
    out = _attention_e(_E.exact(X), *(_exact(w) for w in (wq, wk, wv, wo)), config, p)
    core = f"0.5 + min(e₁, λ√e₂), λ={LAMBDA:g}; projections, RoPE, scores, softmax, p·v, W_o (HF bf16 roundings)"
    return _finish(out, p, "attention", core, f"B,T,D={X.shape}, H={config.n_heads}, G={config.n_kv_heads}")


def block(x: Any, params: Mapping[str, Any], config: Any, dtype: Any) -> Bound:
    """Bound for the pre-norm Block out = h + SwiGLU(RMSNorm(h)), h = x + attn(RMSNorm(x)), output in t.

    Conventions covered in addition to those of :func:`rmsnorm` and :func:`swiglu`: the reference (projections
    in t, RoPE/scores/softmax/p·v in c, heads rounded to t) and HF-Llama's eager bf16 decoder layer (cos/sin
    rounded to t; q·cos, rotate_half(q)·sin and their sum rounded to t; q·kᵀ rounded to t, × 1/√K rounded
    again; softmax in fp32 then probabilities rounded to t; p·v rounded to t; residual sums in t). Errors of
    each stage propagate first-order into the next (RMSNorm through its Jacobian r·w(I − x xᵀ r²/D),
    softmax through p(Δs − Σ p Δs)); δ = min(e₁, λ√e₂), λ = 6, + ½ ULP.
    """
    p = _P(_ulp.as_torch_dtype(dtype))
    X = _exact(x)
    P = {k: _exact(v) for k, v in params.items()}
    eps = float(config.norm_eps)
    xs = _E.exact(X)
    a, _ = _rmsnorm_e(xs, P["attn_norm.weight"], eps, p)
    a = _to_t(a, p)  # the norm's output is stored in t (the ½ ULP final rounding of RMSNorm)
    att = _attention_e(a, P["attn.wq.weight"], P["attn.wk.weight"], P["attn.wv.weight"], P["attn.wo.weight"], config, p)
    h = _round(_add(xs, att), p.ut, p.tiny_t)  # residual sum stored in t
    b, _ = _rmsnorm_e(h, P["ffn_norm.weight"], eps, p)
    b = _round(b, p.ut, p.tiny_t)
    B, T, D = X.shape
    b2 = _E(*(arr.reshape(B * T, D) for arr in (b.v, b.e1, b.e2)))
    f, t = _swiglu_e(b2, P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"], p)
    f = _E(*(arr.reshape(B, T, D) for arr in (f.v, f.e1, f.e2)))
    f = _round(f, p.ut, p.tiny_t)  # the FFN output is stored in t before the residual sum
    out = _add(h, f)
    ov = _row_overflow([t["g"].v, t["u"].v, t["h"].v], p, (B * T,)).reshape(B, T, 1)
    ov = np.broadcast_to(ov, X.shape)
    core = (
        f"0.5 + min(e₁, λ√e₂), λ={LAMBDA:g}; RMSNorm → attention (RoPE, scores, softmax, p·v) → residual → "
        f"RMSNorm → SwiGLU → residual, every HF-bf16 rounding to t included"
    )
    return _finish(
        out,
        p,
        "block",
        core,
        f"D={D}, T={T}, H={config.n_heads}, G={config.n_kv_heads}, F={P['ffn.w_gate.weight'].shape[0]}",
        overflow=ov,
    )
