"""Vectorised double-double arithmetic and error-free transformations (numpy, float64).

A double-double (DD) value is an unevaluated sum ``hi + lo`` of two float64 numbers with
|lo| ≤ ulp(hi)/2, carrying about 106 bits. Every primitive here is one of:

* **error-free** — TwoSum (Knuth), FastTwoSum (Dekker), TwoProd via Veltkamp/Dekker splitting,
  and Rump–Ogita–Oishi ``ExtractVector``: the outputs sum *exactly* to the exact result;
* **bounded** — DD add/mul/div/sqrt with the textbook relative error bounds
  (Joldes, Muller, Popescu, "Tight and rigorous error bounds for basic building blocks of
  double-word arithmetic", ACM TOMS 2017): add ≤ 3u², mul ≤ 4u², div ≤ 10u², sqrt ≤ 4u² for u = 2⁻⁵³;
* **a posteriori bounded** — :func:`acc_sum` returns with each sum a rigorous bound on its error and
  extracts again until the bound is below the target (``2^-tol_bits·|sum|``) or the sum is exact;
* **checked at run time** — :func:`dd_exp` (argument reduction + Taylor + squaring) is compared with
  mpmath on a sample of its actual arguments by the engine on every call.

Validity range: finite inputs with 2⁻⁹⁰⁰ < |v| < 2⁵⁰⁰ (or 0); outside it the engine uses mpmath.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import mpmath
import numpy as np

U = 2.0**-53  # unit roundoff of float64
_SPLITTER = 134217729.0  # 2^27 + 1 (Veltkamp)


class DD(NamedTuple):
    """An array of double-double values hi + lo (numpy float64 arrays of one shape)."""

    hi: np.ndarray
    lo: np.ndarray

    @staticmethod
    def of(a: np.ndarray) -> DD:
        a = np.asarray(a, dtype=np.float64)
        return DD(a, np.zeros_like(a))

    def __getitem__(self, idx):  # type: ignore[override]
        return DD(self.hi[idx], self.lo[idx])

    def reshape(self, *shape) -> DD:
        return DD(self.hi.reshape(*shape), self.lo.reshape(*shape))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.hi.shape


def two_sum(a, b):
    """s + e = a + b exactly, s = fl(a + b) (Knuth, 6 flops, no branch)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def fast_two_sum(a, b):
    """s + e = a + b exactly when |a| ≥ |b| (or a = 0) (Dekker, 3 flops)."""
    s = a + b
    e = b - (s - a)
    return s, e


def split(a):
    """a = h + l with h, l of ≤ 26 significant bits each (Veltkamp); valid for |a| < 2^996."""
    c = _SPLITTER * a
    h = c - (c - a)
    return h, a - h


def two_prod(a, b):
    """p + e = a·b exactly, p = fl(a·b) (Dekker); valid when no under/overflow occurs."""
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _finish(hi, lo, naive):
    """Renormalise, and where the DD algorithm met a non-finite value fall back to the naive result."""
    hi, lo = fast_two_sum(hi, lo)
    bad = ~np.isfinite(hi)
    if np.any(bad):
        hi = np.where(bad, naive, hi)
        lo = np.where(bad, 0.0, lo)
    return DD(hi, lo)


def add(a: DD, b: DD) -> DD:
    """DD + DD (AccurateDWPlusDW, relative error ≤ 3u²)."""
    s, e = two_sum(a.hi, b.hi)
    t, f = two_sum(a.lo, b.lo)
    e = e + t
    s, e = fast_two_sum(s, e)
    e = e + f
    return _finish(s, e, a.hi + b.hi)


def neg(a: DD) -> DD:
    return DD(-a.hi, -a.lo)


def sub(a: DD, b: DD) -> DD:
    return add(a, neg(b))


def add_d(a: DD, b) -> DD:
    """DD + double (DWPlusFP, relative error ≤ 2u²)."""
    s, e = two_sum(a.hi, b)
    e = e + a.lo
    return _finish(s, e, a.hi + b)


def mul(a: DD, b: DD) -> DD:
    """DD × DD (DWTimesDW, relative error ≤ 5u²)."""
    p, e = two_prod(a.hi, b.hi)
    e = e + (a.hi * b.lo + a.lo * b.hi)
    return _finish(p, e, a.hi * b.hi)


def mul_d(a: DD, b) -> DD:
    """DD × double (DWTimesFP, relative error ≤ 2u²)."""
    p, e = two_prod(a.hi, b)
    e = e + a.lo * b
    return _finish(p, e, a.hi * b)


def div(a: DD, b: DD) -> DD:
    """DD / DD by long division with three quotient digits (relative error ≲ 4u²)."""
    with np.errstate(all="ignore"):
        q1 = a.hi / b.hi
        r = sub(a, mul_d(b, q1))
        q2 = r.hi / b.hi
        r = sub(r, mul_d(b, q2))
        q3 = r.hi / b.hi
        s, e = fast_two_sum(q1, q2)
        e = e + q3
        return _finish(s, e, q1)


def sqrt(a: DD) -> DD:
    """√DD: s = √hi, then one Newton correction in DD arithmetic (relative error ≲ 4u²)."""
    with np.errstate(all="ignore"):
        s = np.sqrt(a.hi)
        p, e = two_prod(s, s)
        r = ((a.hi - p) - e) + a.lo  # a − s² (the first difference is exact by Sterbenz)
        corr = np.where(s > 0, r / (2.0 * s), 0.0)
        hi, lo = fast_two_sum(s, corr)
        return _finish(hi, lo, s)


# exp ------------------------------------------------------------------------------------------------
# ln 2 as a triple (each part 53 bits) and 1/k! as DD constants, computed once from mpmath in a private context.
def _constants():
    ctx = mpmath.MPContext()
    ctx.prec = 240
    ln2 = ctx.log(2)
    parts = []
    rest = ln2
    for _ in range(3):
        p = float(rest)
        parts.append(p)
        rest = rest - p
    inv_fact = []
    f = ctx.mpf(1)
    for k in range(1, 16):
        f = f / k
        hi = float(f)
        inv_fact.append((hi, float(f - hi)))
    return tuple(parts), tuple(inv_fact)


(_LN2_A, _LN2_B, _LN2_C), _INV_FACT = _constants()
_EXP_SQUARINGS = 8  # r / 2^8 keeps |s| ≤ 1.4e-3, so 11 Taylor terms reach 2^-120
_EXP_TERMS = 11


def exp(a: DD) -> DD:
    """e^a in DD: a = k·ln2 + r, |r| ≤ ln2/2 (ln2 to 159 bits); expm1(r/2^8) by Taylor (11 terms, Horner
    in DD); m ↦ m(m+2) eight times (expm1 doubling, no cancellation); scale by 2^k.

    Relative error ≲ 2^-100 while e^a ≥ 2^-960 (measured ≈ 2^-105 against mpmath in the tests, and checked by
    the engine on a sample of arguments on every call); below, the DD tail underflows. Overflow → inf,
    underflow → 0 (as e^a in float64).
    """
    with np.errstate(all="ignore"):
        hi = np.clip(a.hi, -745.2, 709.8)
        k = np.rint(hi / _LN2_A)
        p1, e1 = two_prod(k, _LN2_A)
        p2, e2 = two_prod(k, _LN2_B)
        t = hi - p1  # exact (Sterbenz: p1 is within a factor 2 of hi, or k = 0)
        r = DD(t, np.where(a.hi == hi, a.lo, 0.0))
        for part in (e1, p2, e2, k * _LN2_C):  # subtract the rest of k·ln2 at the scale of r, not of a
            r = add_d(r, -part)
        s = DD(np.ldexp(r.hi, -_EXP_SQUARINGS), np.ldexp(r.lo, -_EXP_SQUARINGS))
        # expm1(s) = s·(1 + s/2·(1 + s/3·(…))) via Horner on the coefficients 1/k!
        c_hi, c_lo = _INV_FACT[_EXP_TERMS - 1]
        poly = DD(np.full_like(hi, c_hi), np.full_like(hi, c_lo))
        for j in range(_EXP_TERMS - 2, -1, -1):
            c_hi, c_lo = _INV_FACT[j]
            poly = add(mul(poly, s), DD(np.full_like(hi, c_hi), np.full_like(hi, c_lo)))
        m = mul(poly, s)
        for _ in range(_EXP_SQUARINGS):
            m = mul(m, add_d(m, 2.0))  # expm1(2s) = expm1(s)·(expm1(s) + 2)
        res = add_d(m, 1.0)
        ki = k.astype(np.int64)
        # scale in two steps so that 2^k for k near the extremes neither overflows nor underflows early
        k1 = ki // 2
        k2 = ki - k1
        out_hi = np.ldexp(np.ldexp(res.hi, k1), k2)
        out_lo = np.ldexp(np.ldexp(res.lo, k1), k2)
        out_hi = np.where(a.hi > 709.8, np.inf, np.where(a.hi < -745.2, 0.0, out_hi))
        out_lo = np.where(np.isfinite(out_hi) & (a.hi >= -745.2) & (a.hi <= 709.8), out_lo, 0.0)
        out_hi = np.where(np.isnan(a.hi), np.nan, out_hi)
        return DD(out_hi, np.where(np.isnan(out_hi), 0.0, out_lo))


# accurate summation -----------------------------------------------------------------------------------
def _nextpow2(mu: np.ndarray) -> np.ndarray:
    """Smallest power of two ≥ mu (mu ≥ 0; 0 ↦ 0), exactly, via frexp."""
    m, e = np.frexp(mu)
    return np.where(mu == 0, 0.0, np.where(m == 0.5, np.ldexp(1.0, e - 1), np.ldexp(1.0, e)))


def acc_sum(
    terms: np.ndarray, tol_bits: int = 104, max_rounds: int = 40, overwrite: bool = False, mu: np.ndarray | None = None
) -> tuple[DD, np.ndarray]:
    """Σ terms along the last axis as DD, with a rigorous bound on the error of each sum.

    Rump–Ogita–Oishi ``ExtractVector`` (SIAM J. Sci. Comput. 31(1), 2008): with 2^M ≥ n + 2 and
    σ = 2^M·nextpow2(max|p|), q_i = fl((σ + p_i) − σ) and p_i ← p_i − q_i are error-free and the sum
    τ = Σ q_i is computed *exactly* in any order; afterwards |p_i| ≤ u·σ. Each extraction gains
    53 − M bits. After k extractions the plain fp64 sum of the remainders has error at most
    γ_{n−1}·Σ|p_i| ≤ γ_n·n·u·σ_k (Higham, Thm 4.4 with γ_m = m·u/(1 − m·u)). Rows extract
    again until that bound is ≤ 2^-tol_bits·|τ₁+…+τ_k| or the remainders vanish (sum exact).
    The result is assembled as DD from τ₁ + … + τ_k + fl(Σ p_i) with cascaded TwoSum (≤ 2u² more).

    Speed: the first σ may come from a caller's upper bound ``mu`` ≥ max|p| per row (e.g. max|w|·max|x|),
    later ones from the a priori |p_i| ≤ u·σ (σ_{k+1} = 2^M·u·σ_k), so a round costs four passes.

    terms: (..., n) float64 (float32 is promoted exactly), finite (a row with a non-finite term returns the
    naive sum with bound inf). The input is not modified unless ``overwrite`` (and it is float64).
    Returns (DD of shape (...,), bound ndarray (...,)).
    """
    terms = np.asarray(terms)
    lead = terms.shape[:-1]
    n = terms.shape[-1]
    p = terms.reshape(-1, n)
    p = p if (overwrite and p.dtype == np.float64 and p.flags.c_contiguous) else p.astype(np.float64, copy=True)
    m = p.shape[0]
    bound = np.zeros(m)
    if n == 0 or m == 0:
        return DD(np.zeros(m).reshape(lead), np.zeros(m).reshape(lead)), bound.reshape(lead)
    if mu is None:
        with np.errstate(invalid="ignore", over="ignore"):
            pmax, pmin = p.max(axis=1), p.min(axis=1)
        finite = np.isfinite(pmax) & np.isfinite(pmin)
        mu = np.maximum(pmax, -pmin)
    else:
        mu = np.asarray(mu, dtype=np.float64).reshape(-1)
        finite = np.isfinite(mu)
    if not finite.all():
        naive = p.sum(axis=1)
        p[~finite] = 0.0
        mu = np.where(finite, mu, 0.0)
    two_m = float(2 ** int(np.ceil(np.log2(n + 2))))
    gamma_rem = (n * U) / (1 - n * U) * n * U * 1.0000001  # plain-sum error of the remainders per unit σ
    active = np.arange(m)
    acc_hi = np.zeros(m)
    acc_lo = np.zeros(m)
    sigma_all = two_m * _nextpow2(mu)
    rounds = 0
    while active.size and rounds < max_rounds:
        rounds += 1
        whole = active.size == m
        pa = p if whole else p[active]
        sigma = sigma_all[active]
        sig = sigma[:, None]
        q = np.add(pa, sig)
        q -= sig
        pa -= q
        tau = q.sum(axis=1)  # exact (Rump–Ogita–Oishi, Lemma 3.4)
        if not whole:
            p[active] = pa
        s, e = two_sum(acc_hi[active], tau)
        acc_hi[active], acc_lo[active] = s, acc_lo[active] + e
        rem_bound = gamma_rem * sigma
        est = np.abs(acc_hi[active]) - n * U * sigma
        done = (sigma == 0) | (rem_bound <= np.ldexp(np.maximum(est, 0.0), -tol_bits))
        bound[active] = rem_bound
        sigma_all[active] = two_m * U * sigma  # the remainders satisfy |p_i| ≤ u·σ
        active = active[~done]
    rest = p.sum(axis=1)
    s, e = two_sum(acc_hi, rest)
    lo_tot = acc_lo + e
    hi, lo = fast_two_sum(s, lo_tot)
    # accumulating the τ's: every TwoSum is exact, each of the ≤ rounds+1 lo additions errs by ≤ u·|lo|
    bound = bound + (rounds + 1) * U * np.abs(lo_tot) + U * U * np.abs(hi)
    if active.size:  # not converged within max_rounds (cannot happen for finite data): exact fallback
        rows = terms.reshape(-1, n)
        for i in active:
            row = rows[i].astype(np.float64)
            h = math.fsum(row)
            lo[i] = math.fsum(np.concatenate([row, [-h]]))
            hi[i] = h
            bound[i] = U * U * abs(h)
    if not finite.all():
        hi = np.where(finite, hi, naive)
        lo = np.where(finite, lo, 0.0)
        bound = np.where(finite, bound, np.inf)
    return DD(hi.reshape(lead), lo.reshape(lead)), bound.reshape(lead)
