"""Why the fp32 golden laws miss the slack target of issue 18, and what each way out would cost: the stored SwiGLU
fp32 cases (W_down's dot product over F dominates their error) under three bounds.

    python bench/fp32_floor.py

Per case, the reference's slack (1 ÷ its headroom: max |error| ÷ bound over the case) under

  tier       the probabilistic tier as the laws judge it (``bounds.swiglu``, random_weights): sound for *any*
             value-independent order at 10⁻⁹ per law run — over the random signs of the weights the partial sums of
             an unknown tree are random, and the sequential order's are nearly one Gaussian squared (their
             covariance's largest eigenvalue is 0.81 of its trace), so the tail is exponential: ~λ²/2 units;
  family     a bound sound only for a declared family of orders (those of ``tests/numerics/orders.py``: sequential,
             reversed, lanes, pairwise, blocked, split-K), conditional on the data: λ·u·√(max over the family of
             Σ_ν S_ν² + Σp²) for W_down's dot product alone (Hoeffding given the data, a Gaussian tail) — a lower
             bound of that bound, so the slack printed is at least what such a tier would give;
  empirical  the flash-attention oracle: 2 × the largest error of the emulated orders + 4·u·max|golden| — no derived
             probability, a measured one (as the Block's derivative laws).

and the largest headroom of any emulated order under the tier: how far below it the worst accepted order sits.
"""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.numerics.orders: the emulated orders

from properties.library.laws.stored import _cases
from properties.numerics import bounds, sites
from tests.numerics import orders

FAMILY = ("sequential", "reversed", "lanes2", "lanes8", "lanes16", "lanes128", "pairwise", "blocked384", "splitk4")


def _seq_nodes(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Σ over a sequential sum's roundings of their exact partial sums squared (P_2 … P_n), along ``axis``; an
    addition of an exact 0 (padding) rounds nothing."""
    P = np.cumsum(p, axis=axis)
    rest = np.arange(1, p.shape[axis])
    return (np.take(P, rest, axis=axis) ** 2 * (np.take(p, rest, axis=axis) != 0)).sum(axis=axis)


def _tree_nodes(p: np.ndarray) -> np.ndarray:
    total = np.zeros(p.shape[:-1])
    while p.shape[-1] > 1:
        p = orders._pad(p, 2)
        a, b = p[..., 0::2], p[..., 1::2]
        p = a + b
        total += (p * p * ((a != 0) & (b != 0))).sum(-1)
    return total


def nodes(p: np.ndarray, order: str) -> np.ndarray:
    """Σ_ν S_ν² over the additions of ``order`` (as ``orders.reduce`` computes it) of the exact terms p."""
    if order == "sequential":
        return _seq_nodes(p)
    if order == "reversed":
        return _seq_nodes(p[..., ::-1])
    if order == "pairwise":
        return _tree_nodes(p)
    if order.startswith("lanes"):
        q = orders._pad(p, int(order[5:]))
        q = q.reshape(*q.shape[:-1], -1, int(order[5:]))
        return _seq_nodes(q, axis=-2).sum(-1) + _tree_nodes(q.sum(-2))
    size = int(order[7:]) if order.startswith("blocked") else math.ceil(p.shape[-1] / int(order[6:]))
    q = orders._pad(p, size)
    q = q.reshape(*q.shape[:-1], -1, size)
    return _seq_nodes(q).sum(-1) + _seq_nodes(q.sum(-1))


def family_ratio(a: np.ndarray, W: np.ndarray) -> float:
    """max over the outputs of a Wᵀ of (max over FAMILY of Σ_ν S_ν²) ÷ ((n − 1)·Σp²): how far the family's worst
    partial sums reach beyond the expectation that the tier's union bound over the signs inflates by SIGN_FACTOR."""
    worst = 0.0
    for row in a:
        p = row[None, :] * W
        family = np.max([nodes(p, o) for o in FAMILY], axis=0)
        worst = max(worst, float(np.max(family / ((p.shape[-1] - 1) * (p * p).sum(-1)))))
    return worst


@contextlib.contextmanager
def conditional(factor: float):
    """Every reduction's partial sums bounded given the data, at ``factor``·(n − 1)·Σp² (the family's measured worst,
    :func:`family_ratio`) instead of SIGN_FACTOR·(n − 1)·Σp² or, for the last one, the sub-exponential c."""
    saved = sites.Final.var, bounds.chaos_factor
    sites.Final.var = lambda self: np.minimum(self.q, factor * self.t)
    bounds.chaos_factor = lambda lam: lam * math.sqrt(factor)
    try:
        yield
    finally:
        sites.Final.var, bounds.chaos_factor = saved


def main() -> int:
    torch.set_num_threads(1)
    u = 2.0**-24
    print(f"{'case':<20} {'tier':>6} {'family':>12} {'empirical':>9}  worst order (tier headroom)")
    for case in _cases("swiglu"):
        if case.dtype != torch.float32:
            continue
        x, wg, wu, wd = (case.tensor(n) for n in ("x", "w_gate", "w_up", "w_down"))
        gold = case.golden.hi + case.golden.lo
        y = torch.nn.functional.linear(torch.nn.functional.silu(x @ wg.T) * (x @ wu.T), wd)
        err = np.abs(y.double().numpy() - gold)
        tier = bounds.swiglu(x, wg, wu, wd, torch.float32, random_weights=True).allowed
        xd, gd, ud, dd = (t.double().numpy() for t in (x, wg, wu, wd))
        h = (xd @ gd.T) / (1 + np.exp(-(xd @ gd.T))) * (xd @ ud.T)  # W_down's input, exact to fp64
        ratio = max(family_ratio(xd, gd), family_ratio(xd, ud), family_ratio(h, dd))
        with conditional(ratio):
            family = bounds.swiglu(x, wg, wu, wd, torch.float32, random_weights=True).allowed
        emulated = [orders.swiglu(*(t.numpy() for t in (x, wg, wu, wd)), torch.float32, o)[0] for o in FAMILY]
        errs = [np.abs(e.astype(np.float64) - gold) for e in emulated]
        empirical = 2 * max(e.max() for e in errs) + 4 * u * np.abs(gold).max()
        worst = max(range(len(FAMILY)), key=lambda i: (errs[i] / tier).max())
        tier_s, family_s, empirical_s = (1 / (err / b).max() for b in (tier, family, empirical))
        fam = f"{family_s:.3g} ({ratio:.2g})"
        print(f"{case.id:<20} {tier_s:6.3g} {fam:>12} {empirical_s:9.3g}  "
              f"{FAMILY[worst]} ({(errs[worst] / tier).max():.3g})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
