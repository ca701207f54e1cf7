"""The probabilistic tier's confidence: λ for a comparison of m elements, the joint judge of a last dot
product's partial sums (:func:`chaos_factor`), and the sentence that states the probability. The per-site
coefficients are ``properties.numerics.sites``'.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from properties.numerics import sites

# ------------------------------------------------------------------------------------ the probabilistic tier
TIER_RUN_PROBABILITY = 1e-9  # a correct implementation fails one law run through this tier with at most this chance
TIER_COMPARISONS = 10**5  # the comparisons one law run makes at most (thorough: 1000 examples × ≤ 100 comparisons)


def tier_lambda(m: float) -> float:
    """λ with 2m·exp(−λ²/2) = ½·10⁻⁹/10⁵: the m elements of one comparison all stay within λσ but with probability
    ≤ 5·10⁻¹⁵ (and the random signs of the weights' dot products hold their partial sums but with 5·10⁻¹⁵:
    ``sites.SIGN_TAIL``), so a law run of ≤ 10⁵ comparisons fails through the tier with probability ≤ 10⁻⁹."""
    return math.sqrt(2 * math.log(4 * max(float(m), 1.0) * TIER_COMPARISONS / TIER_RUN_PROBABILITY))


JOINT_SHARE = 2.0**-7  # of a comparison's probability, for each of the two parts of the joint judge (_tier_spread)


@functools.lru_cache(maxsize=256)
def chaos_factor(lam: float) -> float:
    """c with P(|Σ_ν δ_ν| > c·√t) ≤ 2·exp(−λ²/2) for the rounding errors δ_ν of the partial sums S_ν of one dot
    product Σ_k W_k·a_k whose weights' signs ε are independent fair coins given |W| and a (``sites.Final``:
    t = u²·(n − 1)·Σp²), in any value-independent order.

    Given ε, Azuma gives E[exp(θ·Σδ)] ≤ exp(θ²u²·X/2), X = Σ_ν S_ν² = ‖Bε‖², Σ = BᵀB with tr Σ = u⁻²·(the trace)
    ≤ t/u². Over ε (Hsu, Kakade & Zhang 2012, the proof of Thm 1: a Rademacher vector is 1-sub-Gaussian, compared
    with a Gaussian one) E[exp(ηX)] ≤ Π_i (1 − 2η·μ_i)^(−½), μ_i the eigenvalues of Σ — convex in μ, so at most
    (1 − 2η·tr Σ)^(−½) on {μ ≥ 0, Σμ ≤ tr Σ}. With y = θ²·t < 1 Chernoff gives
    P(Σδ > c√t) ≤ exp(−c·√y)·(1 − y)^(−½): c = min_y (λ²/2 − ½·ln(1 − y))/√y (a grid of y: any y is valid).
    About λ²/2 (≈ 50 at λ = 10), where the union of a λ-tail and a SIGN_TAIL-tail gives λ·√SIGN_FACTOR (≈ 110)."""
    y = np.linspace(0.01, 0.9999, 10_000)
    return float(np.min((lam * lam / 2 - 0.5 * np.log1p(-y)) / np.sqrt(y)))


def probabilistic(lam: float, m: float) -> str:
    """The probabilistic tier, in words: its formula, λ, and the probability that a correct implementation
    exceeds it (``sites`` module docstring: the model and the derivation)."""
    p = min(1.0, 4 * m * math.exp(-lam * lam / 2))
    return (
        f"probabilistic tier λ·√(Σ_k c_k²B_k²) + ½ ULP, λ = {lam:.3g}: a correct implementation exceeds it with "
        f"probability ≤ {p:.1g} in this comparison, ≤ {TIER_RUN_PROBABILITY:g} in a law run of ≤ "
        f"{TIER_COMPARISONS:.0e} comparisons (rounding errors of mean zero, any order: Higham & Mary 2019; inputs "
        "with independent random signs)"
    )


def _tier_spread(var: np.ndarray, final: sites.Final | None, applies: np.ndarray) -> tuple[np.ndarray, str]:
    """(λ·√var, its note) — with the last dot product's partial sums (``final``), the smaller of two judges that
    share the comparison's probability (either may be the one that fails): (A) λ_A·√(var + final.var()), those
    partial sums through the union bound over the signs (``sites.SIGN_FACTOR``), with 1 − 2·JOINT_SHARE of it;
    (B) λ_B·√var + c·√final.t, the rest by Azuma and the partial sums jointly with the signs of the row that forms
    them (:func:`chaos_factor`: a sub-exponential tail, where (A) multiplies two tails), JOINT_SHARE each. (B)'s
    small share costs it ~10 % of c; (A) stays within 0.1 % of λ alone."""
    m = int(applies.sum())
    if final is None:
        lam = tier_lambda(m)
        return lam * np.sqrt(var), probabilistic(lam, m)
    lam, lam_b = tier_lambda(m / (1 - 2 * JOINT_SHARE)), tier_lambda(m / JOINT_SHARE)
    t = np.where(applies, final.t, 0.0)
    a = lam * np.sqrt(var + np.where(applies, final.var(), 0.0))
    b = lam_b * np.sqrt(var) + chaos_factor(lam_b) * np.sqrt(t)
    note = probabilistic(lam, m / (1 - 2 * JOINT_SHARE)) + (
        f"; the last dot product's partial sums also jointly with its weights' signs, c = {chaos_factor(lam_b):.3g}"
    )
    return np.minimum(a, b), note
