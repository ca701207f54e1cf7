"""The probabilistic tier's error analysis: for each output element, the variance proxy Σ_k c_k²·B_k² of its
first-order rounding error over every rounding *site* k of every accepted way of computing it.

Model (Higham & Mary 2019, "A new approach to probabilistic rounding error analysis", Model 2.1, in the
martingale form of Connolly, Higham & Mary 2021 and of Ipsen & Zhou 2020): each rounding error δ_k — of an
operation's result, a rounding to the storage dtype, or a partial sum of a reduction — has mean zero given the
rounding errors committed before it, and |δ_k| ≤ B_k (u of its format times the value, plus the absolute error of
a rounding in the subnormal range); the order of operations does not depend on the values. Then, to first order,

    ŷ − y = Σ_k c_k·δ_k,   c_k = ∂y/∂(the value at site k), evaluated at the exact values,

and the Azuma–Hoeffding inequality gives |ŷ − y| ≤ λ·√(Σ_k c_k²·B_k²) with probability ≥ 1 − 2·exp(−λ²/2) (the
telescoping over operations in computation order makes each term a martingale difference: its coefficient depends
only on the roundings before it, which moves it by the second-order factor that ``bounds.propagation._finish`` applies).
This module computes that variance proxy ("var") per output element; ``bounds`` turns it into the probabilistic
tier and states λ and the probability. Everything here is exact float64 arithmetic on the exact inputs.

Reductions, in any order. A sum of n terms p_i evaluated by any binary tree (sequential, L-lane, pairwise,
blocked, split-K) commits one rounding at each of its n − 1 additions ν, of size ≤ u·|S_ν| (S_ν: the exact partial
sum at ν), and m roundings per term (a product, a scaling). Sorting the additions by their number of terms, the ν-th
has at most ν + 1 terms (its subtree's additions all come before it), so for *every* tree

    Σ_ν S_ν² ≤ Σ_{k=2..n} T_k² ≤ Q(p) = Σ_{k=2..n} min(Σ|p|, k·max|p|)²,     var = u²·(Q(p) + m·Σ p²)

(T_k: the sum of the k largest |p|; where the terms are at hand — the norms' squares, dot products up to
``EXACT_LARGEST`` terms — :func:`sorted_tree_squares` sharpens it twice: by the signs, max(P_k, N_k) for T_k (the k
largest positive or negative terms: a subset sum lies between them), and, where the range of the computed terms is
known (the laws' own inputs, and the deterministic bound of a computed one), by the rounding itself — to nearest,
it errs by at most half an ulp of the binade of the largest value it can round, u·2^⌊log2 M_k⌋ (:func:`binade`),
up to 2× below u·M_k; else Q, :func:`tree_squares`)

— λ·u·√Q ≤ λ·u·√(n−1)·Σ|p|, the √n·u of Higham & Mary's inner-product theorem, and smaller when no term
dominates. (Kahan's compensated sum errs by ≤ 2u·Σ|p| ≤ λ·u·√Q, and ≤ λ·u·2^⌊log2 M_n⌋ of the sharpened bound —
M_n ≥ Σ|p|/2, so that is ≥ λ·u·Σ|p|/4, and λ ≥ 8.2 —: inside it without the model.) The model fails
where rounding errors correlate — a constant or repeated row summed lane by lane, a dominant term that makes the
later ones stagnate, subnormals — so the tier is applied only to inputs drawn with independent random signs and
magnitudes (:func:`model_rows`); every other input keeps the deterministic bound alone.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch

__all__ = [
    "matmul",
    "model_rows",
    "rmsnorm",
    "swiglu",
    "tree_squares",
]

U64 = float(np.finfo(np.float64).eps) / 2  # the verifier's own float64 arithmetic
_CHUNK = 1 << 22  # elements of a temporary (terms of many reductions at once) computed in one piece
_CACHED = 1 << 16  # elements of a temporary that a loop of elementwise products keeps in cache


class Precisions(Protocol):
    """What a site needs to know about the arithmetic (``bounds.arithmetic._P`` provides it)."""

    uc: float  # unit roundoff of the compute dtype c
    ut: float  # of the storage dtype t
    narrow: bool  # an accepted convention may round intermediates to t (t narrower than c)
    u_store: float  # a result stored in t
    tiny_c: float  # absolute error of an operation in c that underflows (smallest normal of c)
    tiny_t: float  # absolute error of a rounding to t in the subnormal range (half its spacing)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b through torch (float64): its thread count is the run's (``--threads``), where numpy's BLAS would start
    threads of its own on a loaded machine (a stack of small products: 30× slower measured on 2 busy cores)."""
    return torch.matmul(_tensor(a), _tensor(b)).numpy()


def _tensor(a: np.ndarray) -> torch.Tensor:
    """A zero-copy view where numpy's strides allow it (a transposed matrix is read in place, not copied)."""
    return torch.from_numpy(a) if all(st >= 0 for st in a.strides) else torch.from_numpy(np.ascontiguousarray(a))


def _es(spec: str, *operands: np.ndarray) -> np.ndarray:
    """einsum through torch (as :func:`_mm`)."""
    return torch.einsum(spec, *(_tensor(o) for o in operands)).numpy()


# ---------------------------------------------------------------------------------------------- reductions
def tree_squares(total: np.ndarray, largest: np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """Q = Σ_{k=2..n} min(A, k·M)² for A = Σ|p| and M = max|p| of n terms: ≥ Σ_ν S_ν² over the n − 1 additions ν
    of every binary summation tree (module docstring). Closed form with k₀ = clip(⌊A/M⌋, 1, n):
    M²·(k₀(k₀+1)(2k₀+1)/6 − 1) + A²·(n − k₀)."""
    A, M = np.asarray(total, dtype=np.float64), np.asarray(largest, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        k0 = np.clip(np.floor(np.where(M > 0, A / M, 1.0)), 1.0, np.maximum(n, 1.0))
    Q = M * M * (k0 * (k0 + 1) * (2 * k0 + 1) / 6 - 1) + A * A * (n - k0)
    return np.where(n > 1, Q, 0.0)


# A dot product with a weight row the verifier drew (independent entries of symmetric distribution): the signs of its
# terms are independent fair coins given their magnitudes, so for the (value-independent) tree of any implementation
# Σ_ν S_ν² = ‖Bε‖² with tr(BᵀB) = Σ_k p_k²·depth_k ≤ (n − 1)·Σp², and Hsu, Kakade & Zhang (2012, Thm 1: a
# Rademacher vector is 1-sub-Gaussian) give Σ_ν S_ν² ≤ (1 + 2√t + 2t)·(n − 1)·Σp² but with probability e^(−t).
# t is chosen so that 10⁸ such reductions in one comparison fail with probability ≤ 5·10⁻¹⁵ together.
SIGN_TAIL = 51.4
SIGN_FACTOR = 1 + 2 * SIGN_TAIL**0.5 + 2 * SIGN_TAIL


def _reduction_var(total: np.ndarray, largest: np.ndarray, squares: np.ndarray, n: Any, u: float, tiny: float,
                   per_term: int = 1, signs: bool = False) -> np.ndarray:  # fmt: skip
    """u²·(min(Q, [random signs] SIGN_FACTOR·(n − 1)·Σp²) + per_term·Σp²) + the absolute errors of the operations
    that may underflow (2n·tiny²)."""
    partial = tree_squares(total, largest, n)
    if signs:
        partial = np.minimum(partial, SIGN_FACTOR * (np.asarray(n) - 1) * squares)
    return u * u * (partial + per_term * squares) + 2 * np.asarray(n) * tiny * tiny


class Final(NamedTuple):
    """The partial sums of each output element's *last* reduction, a dot product with a weight row the verifier drew
    (W_down's, whose result reaches the output with coefficient 1), kept apart from the other sites so that
    the tier can judge them jointly with the random signs of that row (``bounds.tier.chaos_factor``) instead of through
    the union bound of SIGN_FACTOR: ``q`` = u²·Q (every tree, deterministic), ``t`` = u²·(n − 1)·Σp² (≥ the trace
    of their covariance over the signs, for every tree)."""

    q: np.ndarray
    t: np.ndarray

    def var(self) -> np.ndarray:
        """Their share of the variance proxy through the union bound: u²·min(Q, SIGN_FACTOR·(n − 1)·Σp²)."""
        return np.minimum(self.q, SIGN_FACTOR * self.t)


EXACT_LARGEST = 128  # dot products up to this long bound their partial sums by their sorted terms
# (:func:`sorted_tree_squares`, a sort per output element); longer ones by Q with max|W_j·|·max|a| for the largest
# term (cheap; the sign-aware bound is below Q there anyway)


def _linear_terms(
    a: np.ndarray, W: np.ndarray, W2: np.ndarray | None = None, a_err: np.ndarray | float | None = None, u: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """For y = a Wᵀ (rows of a, nn.Linear W (m, n); W2 = W², if at hand): a bound on Σ_ν S_ν² over every summation
    tree of the terms W_jk a_k — :func:`sorted_tree_squares` of the signed terms, or for n > EXACT_LARGEST
    :func:`tree_squares` with an upper bound of the largest term — and Σ_k (W_jk a_k)². ``a_err``: |â − a| ≤ a_err,
    the computed input's range known, so each addition is bounded by half an ulp of its binade (products rounded in
    c with unit u: |p̂ − p| ≤ |W|·a_err + u·|W|·(|a| + a_err))."""
    aa, Wa = np.abs(a), np.abs(W)
    squares = matmul(aa * aa, (W * W if W2 is None else W2).T)
    n = W.shape[1]
    if n > EXACT_LARGEST:
        largest = aa.max(axis=-1, keepdims=True, initial=0.0) * Wa.max(axis=-1, initial=0.0)
        return tree_squares(matmul(aa, Wa.T), largest, n), squares
    partial = np.empty_like(squares)
    rows = max(1, _CHUNK // max(1, W.size))
    flat_a, flat_Q = np.asarray(a, dtype=np.float64).reshape(-1, a.shape[-1]), partial.reshape(-1, W.shape[0])
    flat_e = None if a_err is None else np.broadcast_to(a_err, a.shape).reshape(-1, a.shape[-1])
    for i in range(0, flat_a.shape[0], rows):
        terms = flat_a[i : i + rows, None, :] * W[None]
        err = None
        if flat_e is not None:
            ea = flat_e[i : i + rows, None, :] * Wa[None]
            err = ea + u * (np.abs(terms) + ea)
        flat_Q[i : i + rows] = sorted_tree_squares(terms, err, u)
    return partial, squares


def _linear_var(
    a: np.ndarray, W: np.ndarray, p: Precisions, W2: np.ndarray | None = None, a_err: np.ndarray | float | None = None
) -> np.ndarray:
    """The own rounding errors of y = a Wᵀ in c (one product rounding per term, any order), per output element; W
    drawn by the verifier (random signs: see SIGN_TAIL); ``a_err``: :func:`_linear_terms`."""
    rest, final = _linear_final(a, W, p, W2, a_err)
    return rest + final.var()


def _linear_final(
    a: np.ndarray, W: np.ndarray, p: Precisions, W2: np.ndarray | None = None, a_err: np.ndarray | float | None = None
) -> tuple[np.ndarray, Final]:
    """(the own roundings of y = a Wᵀ in c but its partial sums, its partial sums): :func:`_linear_var` split."""
    partial, squares = _linear_terms(a, W, W2, a_err, p.uc)
    n, uc2 = W.shape[1], p.uc * p.uc
    rest = uc2 * squares + 2 * n * p.tiny_c**2  # the products' roundings, underflow (as _reduction_var)
    return rest, Final(uc2 * partial, uc2 * (n - 1) * squares)


def _to_t(value: np.ndarray, p: Precisions) -> np.ndarray:
    """B² of an accepted rounding to t (0 where t holds c: nothing to round)."""
    return (p.ut * np.abs(value) + p.tiny_t) ** 2 if p.narrow else np.zeros_like(value)


def _in_c(value: np.ndarray, p: Precisions, k: float = 1.0) -> np.ndarray:
    """B² of k roundings in c (k independent δ's of u_c each, and underflow)."""
    return k * (p.uc * np.abs(value) + p.tiny_c) ** 2


def _stored(value: np.ndarray, p: Precisions) -> np.ndarray:
    """B² of a result stored in t (the residual stream, the norm's and the FFN's outputs)."""
    return (p.u_store * np.abs(value) + p.tiny_t) ** 2


# ---------------------------------------------------------------------------------------------- which inputs
def model_rows(x: np.ndarray, smallest_normal: float, u: float) -> np.ndarray:
    """Rows (last axis) whose sum of squares the model describes: many distinct magnitudes (at least min(D, 64)/2:
    a wide 16-bit row of random values repeats some), at most D/8 terms below 4·u_c·Σx² (terms that a long sum
    rounds away, ≥ 1/8 of each, one after another and all in one direction: stagnation, as after one outlier), no
    square below the smallest normal of c. A constant or repeated row, one outlier over tiny entries, a row of mixed
    2^10 scales, a row whose squares underflow: their rounding errors correlate, so they keep the deterministic bound
    alone. (A row of fewer than 4 entries gains nothing from the model: it is left out too.)"""
    X = np.abs(np.asarray(x, dtype=np.float64))
    rows = X.reshape(-1, X.shape[-1])
    D = rows.shape[-1]
    if D < 4:
        return np.zeros(X.shape[:-1], dtype=bool)
    srt = np.sort(rows, axis=-1)
    distinct = 1 + np.sum(srt[:, 1:] != srt[:, :-1], axis=-1)
    sq = rows * rows
    total = sq.sum(axis=-1)
    ok = (2 * distinct >= min(D, 64)) & (np.sum(sq < 4 * u * total[:, None], axis=-1) <= D // 8)
    ok &= ~np.any((sq > 0) & (sq < smallest_normal), axis=-1)
    return ok.reshape(X.shape[:-1])


# ------------------------------------------------------------------------------------------------- RMSNorm
def binade(b: np.ndarray) -> np.ndarray:
    """2^⌊log2 b⌋ (0 at 0, b where b is not finite): a rounding to nearest of a value of magnitude ≤ b errs by at most
    u·binade(b) — half an ulp of b's binade, up to 2× below u·b (a value just below a power of two rounds within
    the same half ulp, to it at worst), so b must bound the value that is rounded, never merely approximate it."""
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        _, e = np.frexp(np.where(np.isfinite(b), b, 0.0))  # b = m·2^e, m ∈ [½, 1)
        return np.where(np.isfinite(b) & (b > 0), np.ldexp(1.0, e - 1), b)


def sorted_tree_squares(
    terms: np.ndarray, err: np.ndarray | float | None = None, u: float = 0.0, scale: float = 1.0
) -> np.ndarray:
    """Σ_{k=2..n} M_k² over the last axis: ≥ Σ_ν S_ν² over every summation tree (the ν-th smallest addition has at
    most ν + 1 terms), M_k = max(P_k, N_k), P_k (N_k) the sum of the k largest positive (negative) terms' magnitudes
    — a subset sum is at most its positive part and at least minus its negative part: for terms of random signs
    about half of T_k, the k largest |terms|, which is M_k for terms of one sign (the norms' squares). ≤
    :func:`tree_squares` (a sort per row).

    ``err`` (|p̂ − p| ≤ err per term, where the computed terms' range is known) bounds each addition's rounding by
    half an ulp of the largest value it can round (:func:`binade`) instead of u·|S_ν|: M_k of the terms widened
    by err, plus the tree's own roundings below the node (γ_(n−1)(u)·Σ of those |p̂|); in units of the terms
    when the implementation may sum them scaled by ``scale`` (the norms' 1/D per term: x·x/D, x·x·(1/D), (x/√D)²,
    ≤ 4 roundings of a scaled term) — for a scale not a power of two the binade of the scaled value is not the
    scaled binade, so the larger of the two is taken. A scale that depends on the values (a running maximum, as
    LAPACK's nrm2) is not a convention the model has (``sites`` module docstring: value-independent orders)."""
    a = np.asarray(terms, dtype=np.float64)
    e = 0.0 if err is None else err
    P, N = (np.cumsum(-np.sort(-np.maximum(s * a + e, 0.0), axis=-1), axis=-1)[..., 1:] for s in (1.0, -1.0))
    M = np.maximum(P, N)
    if err is None:
        return np.sum(M * M, axis=-1)
    n = a.shape[-1]
    top = M + (n - 1) * u / (1 - (n - 1) * u) * (P + N)  # γ_(n−1)·Σ|p̂| below the node (P + N ≥ those k |p̂|)
    top = top * (1 + 2 * (n + 8) * U64)  # this function's own float64 sums (an edge must not be missed by them)
    b = binade(top)
    if scale != 1.0:
        b = np.maximum(b, binade(top * scale * (1 + u) ** 4) / scale)
    return np.sum(b * b, axis=-1)


def _norm_r_var(
    xv: np.ndarray, eps: float, p: Precisions, x_err: np.ndarray | float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r, ρ, var of the relative error of r) for r = (Σx²/D + ε)^-½ computed in c: Σx²/D in any order (the D
    squares, the partial sums, the 1/D scaling per term or once), ε rounded to c and the addition (relative to
    v = ms + ε: (1 − ρ)·δ and δ), and rsqrt (or 1/√: two roundings); ρ = ms/v. ``x_err``: |x̂ − x| ≤ x_err for the
    x the norm reads (0: the given input), so the partial sums' roundings are bounded by their binades
    (:func:`sorted_tree_squares`; squares rounded in c)."""
    D = xv.shape[-1]
    sq = xv * xv
    err_sq = None if x_err is None else (np.abs(xv) + x_err) ** 2 * (1 + p.uc) - sq
    S = sq.sum(axis=-1, keepdims=True)
    v = S / D + eps
    with np.errstate(divide="ignore", invalid="ignore"):
        r = 1.0 / np.sqrt(v)
        rho = np.where(v > 0, (S / D) / v, 0.0)
        partial = sorted_tree_squares(sq, err_sq, p.uc, 1.0 / D)[..., None]
        var_S = p.uc**2 * (partial + 2 * (sq * sq).sum(-1, keepdims=True) + S * S)
        rel_S = np.where(S > 0, var_S / (S * S), 0.0)
    uc2 = p.uc * p.uc
    return r, rho, 0.25 * rho * rho * rel_S + 0.25 * uc2 * ((1 - rho) ** 2 + 1) + 2 * uc2


def rmsnorm(
    x: np.ndarray, w: np.ndarray, eps: float, p: Precisions, x_err: np.ndarray | float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """(y, var) for y = x·r·w (before the final rounding to t): r's relative error (:func:`_norm_r_var`; the x it
    reads within ±x_err) and the roundings of x·r and ·w in c, and HF's x·r rounded to t. Underflow of the squares
    is the deterministic tier's (rows near it are not :func:`model_rows`)."""
    r, _, var_r = _norm_r_var(x, eps, p, x_err)
    y = x * r * w
    var = y * y * (var_r + 2 * p.uc * p.uc) + (_to_t(x * r, p) * w * w if p.narrow else 0.0)
    return y, var


def rmsnorm_vjp(x: np.ndarray, w: np.ndarray, eps: float, g: np.ndarray, p: Precisions) -> tuple[np.ndarray, ...]:
    """(var dx, var dγ) of the RMSNorm VJP on rows x (N, D) with a drawn cotangent g (random signs):
    dx = r·(g⊙w) − (r³/D)·x·A, A = Σ_j g_j w_j x_j (a dot product whose terms have g's random signs, any order);
    dγ = Σ_rows g⊙(x·r) (an N-term sum, random signs, any order). Sites: r (the forward's relative error, shared by
    both terms: coefficient term₁ − 3·term₂), r³'s two products, g⊙w (in c; HF: rounded to t) through both terms
    (coefficient r·[i = j] − r³x_i x_j/D), A's dot product, the products and the difference (HF: dx rounded to t);
    for dγ each term's two products (HF: each rounded to t) and its row's r.

    Autograd's sites: x reaches the output by two uses, x·r and Σx², and where they are in two dtypes (T5, flax:
    the statistic of x.to(c), the product of x in t with r in c) autograd forms one gradient contribution per use,
    rounds each to t and adds them in t: sites of B = u_t·|term₁| and u_t·|term₂| (each contribution) besides the
    sum's. Each further use of x in a dtype would be a further contribution, but dx has exactly these two terms
    (x_i enters y through x_i·r and through Σx²; A = Σ g w x is x·r's path through r), so these are every rounding
    to t a correct backward can make; a pattern that lacks some of them has δ = 0 there, inside the model."""
    D = x.shape[-1]
    r, _, var_r = _norm_r_var(x, eps, p)  # (N, 1)
    uc2, ut2 = p.uc * p.uc, (p.ut * p.ut if p.narrow else 0.0)
    gw = g * w
    b_gw = (uc2 + ut2) * gw * gw + (p.tiny_t**2 if p.narrow else 0.0)
    terms = gw * x
    A = terms.sum(axis=-1, keepdims=True)
    at = np.abs(terms)
    var_A = _reduction_var(at.sum(-1, keepdims=True), at.max(-1, keepdims=True), (terms * terms).sum(-1, keepdims=True),
                           D, p.uc, p.tiny_c, signs=True)  # fmt: skip
    r3 = r**3
    t1, t2 = r * gw, r3 * A * x / D
    c_x = r3 * x / D  # coefficient of an absolute error of A on dx_i
    var = (t1 - 3 * t2) ** 2 * var_r + t2 * t2 * 5 * uc2 + t1 * t1 * uc2  # r, r³'s 2 and term₂'s 3 products, term₁'s
    var = var + r * r * b_gw * (1 - 2 * r * r * x * x / D) + c_x * c_x * ((x * x * b_gw).sum(-1, keepdims=True) + var_A)
    dx = t1 - t2
    # the two contributions (x·r's and Σx²'s paths) each rounded to t before their sum (autograd's, where x meets
    # two dtypes: HF T5, flax), then the sum in c and in t: every pattern a correct backward has is a subset
    tiny2 = p.tiny_t**2 if p.narrow else 0.0
    var = var + ut2 * (t1 * t1 + t2 * t2) + 2 * tiny2 + (uc2 + ut2) * dx * dx + tiny2
    xr = x * r
    pr = g * xr  # (N, D): the terms of dγ
    apr = np.abs(pr)
    var_w = _reduction_var(apr.sum(0), apr.max(0), (pr * pr).sum(0), x.shape[0], p.uc, p.tiny_c, signs=True)
    var_w = var_w + (pr * pr * (2 * (uc2 + ut2) + var_r)).sum(0)
    return var, var_w


# -------------------------------------------------------------------------------------------------- SwiGLU
def _silu(g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(σ(g), silu(g), silu'(g)) without overflow."""
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(g))
        sig = np.where(g >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return sig, g * sig, sig * (1 + g * (1 - sig))


def _swiglu_hidden(
    b: np.ndarray, Wg: np.ndarray, Wu: np.ndarray, p: Precisions, b_err: np.ndarray | float | None = None
) -> dict[str, np.ndarray]:
    """The hidden units of SwiGLU on rows b (exact) and the variance proxies of their own roundings, per unit:
    g, u (a D-term dot product each, possibly rounded to t), silu (4 roundings in c, possibly rounded to t), h = s·u
    (one rounding in c, possibly rounded to t). ``c_g``, ``c_u``, ``c_s``: ∂h/∂g, ∂h/∂u, ∂h/∂s. ``b_err``: the
    b an implementation reads is within ±b_err (:func:`_linear_terms`; None: not known, the Block's)."""
    g, u = matmul(b, Wg.T), matmul(b, Wu.T)
    _, s, ds = _silu(g)
    h = s * u
    var_g = _linear_var(b, Wg, p, a_err=b_err) + _to_t(g, p)
    var_u = _linear_var(b, Wu, p, a_err=b_err) + _to_t(u, p)
    var_s = _in_c(s, p, 4.0) + (2 * np.abs(g) * p.tiny_c) ** 2 + _to_t(s, p)
    var_h = _in_c(h, p) + _to_t(h, p)
    c_g, c_u, c_s = u * ds, s, u
    own = c_g * c_g * var_g + c_u * c_u * var_u + c_s * c_s * var_s + var_h  # sites distinct: independent
    return {"g": g, "u": u, "s": s, "h": h, "c_g": c_g, "c_u": c_u, "own": own}


def swiglu(
    x: np.ndarray, Wg: np.ndarray, Wu: np.ndarray, Wd: np.ndarray, p: Precisions, h_err: np.ndarray | None = None
) -> tuple[Any, ...]:
    """(y, var, final) for y = W_d (silu(W_g x) ⊙ W_u x) on exact rows x (before the final rounding to t): every
    site of the hidden units (:func:`_swiglu_hidden`) through W_d (coefficient W_d,jf·∂h_f/∂site: the sites of
    distinct units are distinct roundings) and W_d's products in ``var``, W_d's partial sums in ``final``. x is read
    exactly and ``h_err`` bounds the computed hidden units (the deterministic bound's), so every dot product's
    additions are bounded by their binades (:func:`_linear_terms`)."""
    hid = _swiglu_hidden(x, Wg, Wu, p, b_err=0.0)
    Wd2 = Wd * Wd
    y = matmul(hid["h"], Wd.T)
    own, final = _linear_final(hid["h"], Wd, p, Wd2, h_err)
    var = matmul(hid["own"], Wd2.T) + own
    return y, np.where(_squares_underflow(hid["s"], hid["h"], y)[:, None], np.inf, var), final


TINY = 2.0**-480  # a value whose square times a rounding unit's square would underflow float64 (fp64 data)


def _squares_underflow(*values: np.ndarray) -> np.ndarray:
    """Rows where some value is non-zero and below TINY in magnitude (silu of a large negative gate in fp64):
    the variance proxy (squares of coefficients times squares of roundings) would underflow to 0 there, so the
    probabilistic tier leaves those rows to the deterministic bound."""
    out = np.zeros(values[0].shape[0], dtype=bool)
    for v in values:
        a = np.abs(v)
        out |= np.any((a > 0) & (a < TINY), axis=-1)
    return out


# --------------------------------------------------------------------------------------------------- Block
def _rot(z: np.ndarray) -> np.ndarray:
    """rotate_half: (z₁, z₂) → (−z₂, z₁) on the last axis."""
    half = z.shape[-1] // 2
    return np.concatenate([-z[..., half:], z[..., :half]], axis=-1)


def _pairs(z: np.ndarray) -> np.ndarray:
    """The two halves of the last axis added: an angle of frequency i moves components i and i + K/2 together."""
    half = z.shape[-1] // 2
    return z[..., :half] + z[..., half:]


def rope_frequencies(K: int, theta: float, uc: float) -> tuple[np.ndarray, np.ndarray]:
    """(ω_i = θ^(−2i/K), B_i): an implementation forms ω_i in c from the exponent 2i/K (exact, or rounded:
    Δω/ω = ln θ·Δe) by pow and 1/· (≤ 3u_c): one relative error per frequency, shared by every position."""
    e = 2.0 * np.arange(K // 2) / K
    exact = np.array([float(np.float32(v)) == v for v in e])  # exact in every c (K a power of two, or i = 0)
    return theta**-e, uc * (3.0 + np.where(exact, 0.0, math.log(theta) * e))


def _norm_forward(x: np.ndarray, w: np.ndarray, eps: float, p: Precisions) -> dict[str, np.ndarray]:
    """RMSNorm inside the Block: y = x·r·w, r's relative variance, and B² of y's own roundings (x·r, ·w in c, HF's
    x·r to t, y stored in t)."""
    r, _, var_r = _norm_r_var(x, eps, p)
    y = x * r * w
    elem = y * y * 2 * p.uc * p.uc + (_to_t(x * r, p) * w * w if p.narrow else 0.0) + _stored(y, p)
    return {"y": y, "r": r, "var_r": var_r, "elem": elem}


TRACE: dict[str, list[np.ndarray]] | None = None  # when a dict: each site class's var, by name (a breakdown)


def _traced(name: str, term: np.ndarray) -> np.ndarray:
    if TRACE is not None:
        TRACE.setdefault(name, []).append(term.copy())
    return term


QUERIES = 32  # query tokens analysed at once (the temporaries grow as QUERIES·T·D per head)


def block(
    x: np.ndarray, P: dict[str, np.ndarray], cfg: Any, p: Precisions, tokens: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, Final]:
    """(var, fixed, final), each (B, len(tokens), D), of the pre-norm Block's output at the query tokens ``tokens``
    (default all): ``var`` the variance proxy of the model, ``fixed`` the deterministic part (each RoPE frequency's
    own error, shared by every position, with its exact coefficient), ``final`` W_d's partial sums (:class:`Final`).

    Sites, each with its exact coefficient onto out_t = h_t + f_t (first order; G_t = ∂out_t/∂h_t = I + ∂f/∂b·∂b/∂h
    and M_t = G_t·W_o, D×D and D×HK per query token):
      FFN: W_d's dot products; the roundings of f, h, silu, g, u (``_swiglu_hidden``) and of the ffn-norm output b;
           the ffn-norm's r (Σh² in any order) along ∂f/∂b·b; the residual h stored in t.
      attention: W_o's dot products, its output in t; p·v (any order over s ≤ t) and the heads in t; per score (q·k
           in any order, the scaling, HF's two roundings to t, s − max, exp): M_t·P_ts(v_s − o_t); per probability
           (division, rounding to t): M_t·P_ts·v_s; the softmax sum Z (positive terms, any order) and its
           reciprocal: −M_t·o_t; v_s, k_s (rotated back to q̃ = R_sᵀq'_t) and k'_s = RoPE(k_s) through every later
           query's scores and p·v; q_t and q'_t; the RoPE tables: each angle t·ω_i (one rounding per position, shared
           by q_t, k_t and every head), cos and sin (evaluated in c, HF's rounding to t); the attn-norm's output
           a_s (its roundings reach q_s, k_s and v_s together: their paths added before squaring,
           :func:`_attention_input`) and its r_s (Σx² in any order: scales q_s, k_s, v_s).
    Where two paths of one site meet (a table entry of position t moves both q_t and k_t) the sum is bounded by
    (a + b)² ≤ 2a² + 2b²."""
    tokens = np.arange(x.shape[1]) if tokens is None else np.asarray(tokens)
    out = [_block_one(x[b], P, cfg, p, tokens) for b in range(x.shape[0])]
    var, fixed, q, t = (np.stack([o[i] for o in out]) for i in range(4))
    return var, fixed, Final(q, t)


def _block_one(x: np.ndarray, P: dict[str, np.ndarray], cfg: Any, p: Precisions, J: np.ndarray):
    T, D = x.shape
    H, G = cfg.n_heads, cfg.n_kv_heads
    K = D // H
    eps = float(cfg.norm_eps)
    Wq, Wk, Wv, Wo = (P[f"attn.{n}.weight"] for n in ("wq", "wk", "wv", "wo"))
    Wg, Wu, Wd = (P[f"ffn.{n}.weight"] for n in ("w_gate", "w_up", "w_down"))
    f: dict[str, Any] = {"T": T, "D": D, "H": H, "G": G, "K": K, "rep": H // G, "sq": 1.0 / math.sqrt(K)}
    n1 = _norm_forward(x, P["attn_norm.weight"], eps, p)
    a = n1["y"]
    q, k, v = (matmul(a, W.T) for W in (Wq, Wk, Wv))
    q3, k3, v3 = q.reshape(T, H, K), k.reshape(T, G, K), v.reshape(T, G, K)
    freq, b_freq = rope_frequencies(K, float(cfg.rope_theta), p.uc)
    ang = np.arange(T)[:, None] * freq[None, :]  # (T, K/2)
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    c3, s3 = cos[:, None, :], sin[:, None, :]
    qp, kp = q3 * c3 + _rot(q3) * s3, k3 * c3 + _rot(k3) * s3
    kx, vx = np.repeat(kp, f["rep"], axis=1), np.repeat(v3, f["rep"], axis=1)  # head h reads kv head h // rep
    uc2, ut2 = p.uc * p.uc, (p.ut * p.ut if p.narrow else 0.0)
    f.update(
        W=(Wq, Wk, Wv, Wo, Wg, Wu, Wd), w2=P["ffn_norm.weight"], eps=eps, x=x, a=a, q3=q3, k3=k3, qp=qp, kx=kx,
        vx=vx, cos=cos, sin=sin, ang=ang, b_freq=b_freq, uc2=uc2, ut2=ut2, var_r1=n1["var_r"][:, 0],
    )  # fmt: skip
    f["elem_a"] = n1["elem"]  # (T, D): the roundings of a, which reach q_s, k_s, v_s together (_attention_input)
    f["var_v"] = (_linear_var(a, Wv, p) + _to_t(v, p)).reshape(T, G, K)
    f["var_k"] = (_linear_var(a, Wk, p) + _to_t(k, p)).reshape(T, G, K)
    f["var_q"] = (_linear_var(a, Wq, p) + _to_t(q, p)).reshape(T, H, K)
    rnd = uc2 + ut2  # a product or sum of RoPE in c, possibly rounded to t (HF)
    f["rope_k"] = rnd * ((k3 * c3) ** 2 + (_rot(k3) * s3) ** 2 + kp * kp)
    f["rope_q"] = rnd * ((q3 * c3) ** 2 + (_rot(q3) * s3) ** 2 + qp * qp)
    f["bcos"], f["bsin"] = rnd * cos * cos, rnd * sin * sin  # cos, sin evaluated in c, HF: rounded to t
    f["bang"] = (p.uc * ang) ** 2  # (T, K/2): the angle t·ω_i rounded in c
    out = [np.zeros((len(J), D)) for _ in range(4)]  # var, fixed, final.q, final.t
    for i in range(0, len(J), QUERIES):
        var, fixed, final = _queries(f, np.asarray(J[i : i + QUERIES]), p)
        for whole, part in zip(out, (var, fixed, *final), strict=True):
            whole[i : i + QUERIES] = part
    return out


def _attention_input(
    f: dict[str, Any], J: np.ndarray, M: np.ndarray, MAR: np.ndarray, w: np.ndarray, Pj: np.ndarray
) -> np.ndarray:
    """Σ_s Σ_m B_sm²·c_tism² for the roundings of the attn-norm's output a_s (B² = ``elem_a``): one site each, whose
    exact coefficient sums its paths through k_s and v_s, c = Σ_h (U_hts,i·Y_hts,m + P_hts·N_t,ihm) — U = ∂out_t,i
    /∂score_hts, Y = (R_sᵀq'_t,h/√K)·W_k,g(h) (the score's derivative in a_s through k_s), N = M_t[i, h, :]·W_v,g(h) —
    and, at s = t, through q_t (MAR_t·W_q). The paths of one rounding add before they are squared: charging each
    projection apart would miss their correlation. The square is expanded over head pairs (h, g), so no
    (t, i, s, m) array is formed; the keys s go in blocks."""
    T, D, H, K, rep, sq = (f[n] for n in ("T", "D", "H", "K", "rep", "sq"))
    Wq, Wk, Wv = (torch.from_numpy(W) for W in f["W"][:3])
    heads = torch.from_numpy(np.arange(H) // rep)
    Wk3, Wv3 = (W.reshape(-1, K, D)[heads] for W in (Wk, Wv))  # (H, K, D): the kv head of head h
    nJ = len(J)
    Mt, wt, Pt = (torch.from_numpy(a) for a in (M, w, Pj))
    N = torch.einsum("tihk,hkm->htim", Mt, Wv3)  # (H, nJ, D, D)
    Ncat = N.permute(1, 3, 0, 2).reshape(nJ, D, H * D)  # (nJ, m, (g, i))
    qJ = torch.from_numpy(np.ascontiguousarray(f["qp"][J].transpose(1, 0, 2)))  # (H, nJ, K): q'_t
    cos_all, sin_all, elem = (torch.from_numpy(f[n]) for n in ("cos", "sin", "elem_a"))

    def derivatives(sl: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(U, Y), each (H, nJ, b, D), for the keys sl."""
        cos, sin = cos_all[sl], sin_all[sl]
        qt = qJ[:, :, None, :] * cos[None, None] - torch.from_numpy(_rot(qJ.numpy()))[:, :, None, :] * sin[None, None]
        Y = torch.einsum("htsk,hkm->htsm", qt, Wk3) * sq
        return torch.einsum("htsk,tihk->htsi", wt[:, :, sl], Mt), Y

    # v–v: Σ_{h,g,m} N_h·N_g·Σ_s P_h·P_g·e (the keys summed first)
    PP = (Pt[:, None] * Pt[None]).reshape(H * H * nJ, T)
    W3 = torch.matmul(PP, elem).reshape(H, H, nJ, D)
    charge = torch.einsum("htim,gtim,hgtm->ti", N, N, W3)
    block = max(1, _CACHED // max(1, H * nJ * D))
    for s0 in range(0, T, block):
        sl = slice(s0, min(T, s0 + block))
        U, Y = derivatives(sl)
        eY = Y * elem[sl][None, None]
        Ps = Pt[:, :, sl].permute(1, 2, 0)[..., None]  # (nJ, b, H, 1)
        for h in range(H):  # (broadcast products, not einsum: its batched matmuls of H × D are tiny and slow)
            KK = (eY[h][None] * Y).sum(-1)  # Σ_m e·Y_h·Y_g, every g: (H, nJ, b)
            charge += ((KK[..., None] * U).sum(0) * U[h]).sum(1)  # k–k
            kv = torch.matmul(eY[h], Ncat).reshape(nJ, -1, H, D)  # Σ_m e·Y_h·N_g, every g: (nJ, b, H, D_i)
            charge += 2 * ((Ps * kv).sum(2) * U[h]).sum(1)  # k–v: 2·Σ_{s,g} U_h·P_g·(…)
    # at s = t the rounding also moves q_t: Σ_m e·((c_kv + c_q)² − c_kv²)
    diag, idx = torch.from_numpy(np.asarray(J)), torch.arange(nJ)
    qt = qJ * cos_all[diag][None] - torch.from_numpy(_rot(qJ.numpy())) * sin_all[diag][None]  # (H, nJ, K)
    U = torch.einsum("htk,tihk->hti", wt[:, idx, diag], Mt)
    Y = torch.einsum("htk,hkm->htm", qt, Wk3) * sq
    c_kv = torch.einsum("hti,htm->tim", U, Y) + torch.einsum("ht,htim->tim", Pt[:, idx, diag], N)
    c_q = torch.matmul(torch.from_numpy(MAR).reshape(nJ, D, H * K), Wq)  # (nJ, D, D)
    charge += torch.einsum("tim,tm->ti", c_q * (2 * c_kv + c_q), elem[diag])
    return charge.numpy()


def _queries(f: dict[str, Any], J: np.ndarray, p: Precisions) -> tuple[np.ndarray, np.ndarray, Final]:
    """(var, fixed, final) of out_t for the query tokens J (see :func:`block`)."""
    T, D, H, G, K, rep, sq = (f[n] for n in ("T", "D", "H", "G", "K", "rep", "sq"))
    _, _, _, Wo, Wg, Wu, Wd = f["W"]
    uc2, ut2 = f["uc2"], f["ut2"]
    qp, kx, vx, q3, k3 = f["qp"], f["kx"], f["vx"], f["q3"], f["k3"]
    cos, sin, ang = f["cos"], f["sin"], f["ang"]
    nJ, half = len(J), K // 2

    # the exact forward of the queries J (every key): scores, softmax, p·v, W_o, residual, ffn norm, FFN
    mask = (np.arange(T)[None, :] <= J[:, None])[None]  # (1, nJ, T)
    S_all = np.where(mask, matmul(qp[J].transpose(1, 0, 2), kx.transpose(1, 2, 0)) * sq, -np.inf)  # (H, nJ, T)
    mJ = S_all.max(axis=-1, keepdims=True)
    with np.errstate(under="ignore"):
        e = np.where(mask, np.exp(S_all - mJ), 0.0)
    ZJ = e.sum(axis=-1)  # (H, nJ)
    Pj = e / ZJ[..., None]
    oJ = matmul(Pj, vx.transpose(1, 0, 2)).transpose(1, 0, 2)  # (nJ, H, K)
    attJ = matmul(oJ.reshape(nJ, H * K), Wo.T)
    hJ = f["x"][J] + attJ
    n2 = _norm_forward(hJ, f["w2"], f["eps"], p)
    hid = _swiglu_hidden(n2["y"], Wg, Wu, p)

    # Jacobians: G_t = ∂out_t/∂h_t, M_t = G_t·W_o (nJ, D, H, K)
    Ffn = _es("if,tf,fm->tim", Wd, hid["c_g"], Wg) + _es("if,tf,fm->tim", Wd, hid["c_u"], Wu)
    r2, w2 = n2["r"], f["w2"]
    N2 = r2[..., None] * (np.diag(w2)[None] - (w2 * hJ)[:, :, None] * hJ[:, None, :] * (r2 * r2 / D)[..., None])
    Gt = np.eye(D)[None] + matmul(Ffn, N2)
    M = matmul(Gt, Wo).reshape(nJ, D, H, K)
    G2 = Gt * Gt

    # FFN and the residual (row-wise)
    own, final = _linear_final(hid["h"], Wd, p)
    var = own + _stored(matmul(hid["h"], Wd.T), p)
    _traced("ffn.down", var + final.var())
    var += _traced("ffn.hidden", matmul(hid["own"], (Wd * Wd).T))
    var += _traced(
        "ffn.norm", _es("tim,tm->ti", Ffn * Ffn, n2["elem"]) + _es("tim,tm->ti", Ffn, n2["y"]) ** 2 * n2["var_r"]
    )
    var += _traced("residual", _es("tim,tm->ti", G2, _stored(hJ, p)))
    var += _traced("attn.out", _es("tim,tm->ti", G2, _linear_var(oJ.reshape(nJ, H * K), Wo, p) + _to_t(attJ, p)))

    # p·v (any order over s ≤ t) and the heads rounded to t
    vabs = np.abs(vx)
    pv_max = (Pj.transpose(1, 2, 0)[:, :, :, None] * vabs[None]).max(axis=1)  # (nJ, H, K)
    n_terms = (J + 1)[:, None, None]
    var_o = _reduction_var(
        _es("hts,shk->thk", Pj, vabs), pv_max, _es("hts,shk->thk", Pj * Pj, vabs * vabs), n_terms,
        p.uc, p.tiny_c,
    ) + _to_t(oJ, p)  # fmt: skip
    var += _traced("attn.pv", _es("tihk,thk->ti", M * M, var_o))

    # the softmax sum Z (positive terms, the largest e⁰ = 1, any order) and its reciprocal: o_t scales by 1 − ε_Z
    var_Z = uc2 * (tree_squares(ZJ, 1.0, J[None, :] + 1) / (ZJ * ZJ) + 1.0)  # (H, nJ)
    var += _traced("softmax.sum", _es("thi,ht->ti", _es("tihk,thk->thi", M, oJ) ** 2, var_Z))

    # per score: the q·k dot product in any order, the scaling, HF's two roundings to t, s − max, exp (relative to
    # e, i.e. additive in s); per probability: the division and its rounding to t, and e^(s−m) flushed below tiny_c
    SJ = np.where(mask, S_all, 0.0)
    aq, ak = np.abs(qp[J]), np.abs(kx)
    qk_max = (aq[:, None] * ak[None]).max(axis=-1).transpose(2, 0, 1) * sq  # (H, nJ, T)
    aqh, akh = aq.transpose(1, 0, 2), ak.transpose(1, 2, 0)  # (H, nJ, K), (H, K, T)
    var_S = _reduction_var(
        matmul(aqh, akh) * sq, qk_max, matmul(aqh * aqh, akh * akh) * sq * sq, K, p.uc, p.tiny_c * sq
    )
    var_S = np.where(mask, var_S + (uc2 + 2 * ut2) * SJ * SJ + uc2 * (SJ - mJ) ** 2 + uc2, 0.0)
    tiny_t2 = p.tiny_t**2 if p.narrow else 0.0
    var_P = np.where(mask, (uc2 + ut2) * Pj * Pj + (p.tiny_c / ZJ[..., None]) ** 2 + tiny_t2, 0.0)
    w = Pj[..., None] * (vx.transpose(1, 0, 2)[:, None] - oJ.transpose(1, 0, 2)[:, :, None])  # (H,nJ,T,K)
    vv = (vx[:, :, :, None] * vx[:, :, None, :]).reshape(T, H, K * K).transpose(1, 0, 2)  # (H, T, K²)
    C = matmul((w * var_S[..., None]).swapaxes(-1, -2), w) + matmul(var_P, vv).reshape(H, nJ, K, K)
    var += _traced("softmax.scores+probs", _es("tihk,htkl,tihl->ti", M, C, M))

    # q_t and q'_t: o_t moves by A_t·Δq'_t, A_t = Σ_s ∂o_t/∂score_ts·k'_sᵀ/√K; q'_t = R_t q_t
    MA = _es("tihk,htkl->tihl", M, matmul(w.swapaxes(-1, -2), kx.transpose(1, 0, 2)[:, None]) * sq)  # ∂out_t/∂q'_t
    R = np.zeros((nJ, K, K))
    for j in range(K):
        partner = (j + half) % K
        R[:, j, j] = cos[J, j]
        R[:, j, partner] = -sin[J, j] if j < half else sin[J, j]
    MAR = _es("tihl,tlm->tihm", MA, R)
    var += _traced("q", _es("tihk,thk->ti", MA * MA, f["rope_q"][J]) + _es("tihk,thk->ti", MAR * MAR, f["var_q"][J]))
    # the tables of position t through q_t (doubled: the same entries move k_t, added below)
    cq, sq_ = _es("tihk,thk->tik", MA, q3[J]), _es("tihk,thk->tik", MA, _rot(q3[J]))
    angq = _pairs(_es("tihk,thk->tik", MA, _rot(qp[J])))  # (nJ, D, K/2): ∂out_t/∂angle(t, i) via q_t
    tab = _es("tik,tk->ti", cq * cq, f["bcos"][J]) + _es("tik,tk->ti", sq_ * sq_, f["bsin"][J])
    var += _traced("rope.tables", 2 * tab + 2 * _es("tik,tk->ti", angq * angq, f["bang"][J]))
    freq_coef = angq * ang[J][:, None, :]  # a frequency's own error moves every angle: the q part (keys below)

    # the attn-norm's r_s scales q_s, k_s, v_s: coefficient Σ_h U·S (keys) + Σ_h P·(M·v) (values) + q (s = t)
    coef_r = np.zeros((nJ, T, D))
    coef_r[np.arange(nJ), J] += _es("tihk,thk->ti", MA, qp[J])
    for h in range(H):  # Σ_h P_hts·(M_t[:, h, :]·v_s): (nJ, T, K) @ (nJ, K, D)
        coef_r += matmul(Pj[h][:, :, None] * vx[None, :, h, :], M[:, :, h, :].swapaxes(-1, -2))
    diag = (np.arange(nJ), J)
    for g in range(G):
        hs = np.arange(g * rep, (g + 1) * rep)
        Mg = M[:, :, hs, :]  # (nJ, D, rep, K)
        # v_s: coefficient Σ_{h∈g} M_t[i,h,j]·P_hts
        Pi = _es("ats,bts,sk->tabk", Pj[hs], Pj[hs], f["var_v"][:, g, :])
        var += _traced("v", _es("tiak,tibk,tabk->ti", Mg, Mg, Pi))
        # keys: U = ∂out_t/∂score_ts, then per key site its coefficient on the score
        U = matmul(w[hs], Mg.transpose(2, 0, 3, 1))  # (rep, nJ, T, D): ∂out_t/∂score_ts
        coef_r += (U * SJ[hs][..., None]).sum(axis=0)
        qpg = qp[J][:, hs, :]  # (nJ, rep, K)
        qt = qpg[:, :, None, :] * cos[None, None] - _rot(qpg)[:, :, None, :] * sin[None, None]  # R_sᵀ q'_t
        kg, rkg = k3[:, g, :], _rot(k3[:, g, :])
        tables = f["bcos"] * kg * kg + f["bsin"] * rkg * rkg  # (T, K): cos/sin entries through k'_s
        angk = _pairs(qpg[:, :, None, :] * _rot(kx[:, g * rep, :])[None, None])  # (nJ, rep, T, K/2): ∂/∂angle(s,i)
        V = np.empty((nJ, T, rep, rep))
        wk_, vk_ = (f["rope_k"][:, g, :] + tables).T, f["var_k"][:, g, :]
        for a_ in range(rep):
            for b_ in range(a_, rep):
                V[:, :, a_, b_] = matmul(qpg[:, a_] * qpg[:, b_], wk_) + ((qt[:, a_] * qt[:, b_]) * vk_).sum(-1)
                V[:, :, a_, b_] += ((angk[:, a_] * angk[:, b_]) * f["bang"]).sum(-1)
                V[:, :, b_, a_] = V[:, :, a_, b_]
        for a_ in range(rep):
            for b_ in range(rep):
                var += _traced("k", (U[a_] * U[b_] * V[:, :, a_, b_][..., None]).sum(axis=1) / K)
        # position t's tables through k_t: once more at s = t (with the q_t path above: 2a² + 2b²)
        Vt = _es("tak,tbk,tk->tab", qpg, qpg, tables[J]) + _es(
            "tai,tbi,ti->tab", angk[diag[0], :, J], angk[diag[0], :, J], f["bang"][J]
        )  # fmt: skip
        Ud = U[:, diag[0], J]  # (rep, nJ, D)
        var += _traced("rope.tables", _es("ati,bti,tab->ti", Ud, Ud, Vt) / K)
        freq_coef = freq_coef + matmul(U.swapaxes(-1, -2), angk.swapaxes(0, 1) * ang).sum(axis=0) * sq  # via keys
    var += _traced("attn.norm", _es("tsi,s->ti", coef_r * coef_r, f["var_r1"]))
    var += _traced("attn.input", _attention_input(f, J, M, MAR, w, Pj))
    fixed = _es("tij,j->ti", np.abs(freq_coef), f["b_freq"])
    return var, fixed, final
