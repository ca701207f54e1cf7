"""The bound a comparison is judged against (:class:`Bound`: the allowance per element, its formula and tiers),
how it is reported (accuracy and order classes, ULP counts as text) and how two bounds combine (:func:`between`).
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from collections.abc import Mapping

import numpy as np
import torch

# The derivative laws' oracle: measured on correct implementations, not derived (failure messages say so).
EMPIRICAL = frozenset({"block_vjp", "block_depth"})


@dataclasses.dataclass(frozen=True)
class Bound:
    """Allowed error per element of one comparison, with the formula that derived it.

    ``abs``       the pass/fail allowance |actual − expected| (every accepted convention and reduction order);
    ``ulps``      ``abs`` in ULPs of ``dtype`` at the golden value (golden comparisons; None for invariants);
    ``formula``   printed in failure messages: the formula, its symbols, the numbers substituted;
    ``dtype``     errors are also measured in ULPs of this dtype (None: a derived quantity, absolute errors);
    ``overflow``  True where an accepted convention overflows in an intermediate (bound +inf: not judged);
    ``pairwise``  the tight reference: the same analysis with pairwise reductions (≤ ``abs``; reported only);
    ``alternatives`` {name: abs} of the same bound under other declared arithmetics (:func:`shadowed`; reported only:
                  whether the measurements needed a declaration);
    ``prob``      the probabilistic tier (inputs the law drew, :func:`probabilistic`): allowed |actual − expected|
                  per element, +inf where it does not apply; None: nowhere;
    ``prob_note`` its λ, the probability that a correct implementation exceeds it, and the model;
    ``empirical`` (measured, unit) of an empirical bound (:data:`EMPIRICAL`): the part measured on the baselines and
                  the unit of the rest (u at the result's scale); a comparison reports its excess (error − measured)
                  ÷ unit, which a correct implementation keeps below :data:`UNSEEN_ROUNDINGS` (reported only).
    """

    abs: np.ndarray
    ulps: np.ndarray | None
    formula: str
    component: str = ""
    dtype: torch.dtype | None = None
    overflow: np.ndarray | None = None
    pairwise: np.ndarray | None = None
    alternatives: Mapping[str, np.ndarray] | None = None  # name → ``abs`` under another declaration (:func:`shadowed`)
    prob: np.ndarray | None = None
    prob_note: str = ""
    empirical: tuple[float, float] | None = None
    tier_off: str = ""  # why the probabilistic tier did not judge inputs it would have (a declaration it cannot model)

    @property
    def judge(self) -> str:
        """The tier that judges this comparison: "empirical" (:data:`EMPIRICAL`), "probabilistic" (the tier applies
        to some element) or "deterministic"."""
        if self.component in EMPIRICAL:
            return "empirical"
        if self.prob is not None and bool(np.isfinite(self.prob).any()):
            return "probabilistic"
        return "deterministic"

    @property
    def allowed(self) -> np.ndarray:
        """What the comparison may differ by: ``abs``, and where the probabilistic tier applies, ≤ ``prob``."""
        return self.abs if self.prob is None else np.minimum(self.abs, self.prob)

    def tier(self, diff: float, index: int) -> str:
        """Which tier an error ``diff`` at flat ``index`` fails: "deterministic" (beyond ``abs``) or
        "probabilistic" (within ``abs``, beyond ``prob``) — "" when it fails neither."""
        if not diff <= float(np.broadcast_to(self.abs, np.shape(self.abs)).flat[index]):
            return "deterministic"
        if self.prob is not None and not diff <= float(self.prob.flat[index]):
            return "probabilistic"
        return ""

    @property
    def max_ulps(self) -> float:
        u = self.ulps if self.ulps is not None else np.zeros(0)
        finite = u[np.isfinite(u)] if u.size else u
        return float(finite.max()) if finite.size else float("inf") if u.size else 0.0

    @property
    def accuracy(self) -> str:
        """The accuracy class this bound guarantees (from its largest ULP allowance)."""
        return accuracy_class(self.max_ulps)

    def __str__(self) -> str:
        return self.formula


def accuracy_class(max_ulp: float) -> str:
    """ "correctly rounded" (≤ 0.5 ULP) | "faithful" (< 1 ULP) | "≤ k ULP" (k = ``ulps_text(max_ulp)``)."""
    if not math.isfinite(max_ulp):
        return "unbounded"
    if max_ulp <= 0.5:
        return "correctly rounded"
    if max_ulp < 1.0:
        return "faithful"
    return f"≤ {ulps_text(max_ulp)} ULP"


def ulps_text(ulps: float) -> str:
    """A ULP count as every report prints it: rounded up to 2 significant digits (3.507 → 3.6, 2591.4 → 2600,
    1.0965e8 → 1.1e8, 0.5000000000000042 → 0.51) — an upper bound, so the text never falls into a better accuracy
    class — with more digits where 2 would reach the next class's edge from below (a faithful 0.9996 reads 0.9996,
    never 1); exponent notation from 10⁴."""
    if not math.isfinite(ulps):
        return str(ulps)
    if ulps <= 0:
        return "0"
    exact = decimal.Decimal(repr(ulps))  # the shortest decimal of the float: 1.3 is 1.3, not 1.30000000000000004
    for digits in range(2, 18):
        step = decimal.Decimal(1).scaleb(exact.adjusted() - digits + 1)
        up = (exact / step).to_integral_value(rounding=decimal.ROUND_CEILING) * step
        if not (exact < 1 <= up):  # 1 ULP is the faithful class's open edge: a value below it never reads 1
            break
    if up >= 10_000:
        mantissa, _, exponent = f"{up:.{digits - 1}e}".partition("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    text = f"{up:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def order_class(headroom: float, pairwise_headroom: float | None) -> str:
    """ "pairwise" (error within the pairwise reference), "any order" (only within the any-order bound), or
    "out of bound" (headroom > 1: the law fails)."""
    if not headroom <= 1.0:
        return "out of bound"
    if pairwise_headroom is None or pairwise_headroom <= 1.0:
        return "pairwise"
    return "any order"


def between(a: Bound, b: Bound | None = None, *, formula: str | None = None) -> Bound:
    """Two results that are each within their own bound of one exact value differ by at most a + b (b = a if
    omitted: "2·bound"). ULPs are those of ``a.dtype``; not judged where either is not."""
    b = a if b is None else b
    pw = None if a.pairwise is None or b.pairwise is None else a.pairwise + b.pairwise
    ov = None if a.overflow is None and b.overflow is None else _either(a.overflow, b.overflow, a.abs.shape)
    text = formula or (f"2·({a.formula})" if b is a else _sum_text(a.formula, b.formula))
    alt = {k: v + b.alternatives[k] for k, v in (a.alternatives or {}).items() if k in (b.alternatives or {})}
    prob = None if a.prob is None or b.prob is None else a.prob + b.prob  # each within its tier: the sum (2·10⁻⁹)
    note = a.prob_note if prob is not None else ""
    off = a.tier_off or b.tier_off
    return Bound(a.abs + b.abs, None, text, a.component, a.dtype, ov, pw, alt or None, prob=prob, prob_note=note,
                 tier_off=off)  # fmt: skip


def _sum_text(a: str, b: str) -> str:
    """ "(a) + (b)"; a formula that differs from the other only in its bracketed note (dtype, shape) is printed
    once, with both notes: a failure message gives each formula once."""
    core, sep, note_a = a.rpartition(" [")
    other, _, note_b = b.rpartition(" [")
    if sep and core == other:
        return f"b₁ + b₂, each {core} [{note_a} and [{note_b}"
    return f"({a}) + ({b})"


def _either(m1: np.ndarray | None, m2: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, dtype=bool)
    for m in (m1, m2):
        if m is not None:
            out |= np.broadcast_to(m, shape)
    return out
