"""Why the fp32 golden laws miss the slack target of issue 18, and what each way out would cost: the stored fp32 cases
of SwiGLU (W_down's dot product over F dominates their error), RMSNorm and AddRMSNorm (Σx² over D) under three
bounds.

    python bench/fp32_floor.py

Per case, the reference's slack (1 ÷ its headroom: max |error| ÷ bound over the case) under

  tier       the probabilistic tier as the laws judge it (``bounds.swiglu``, ``rmsnorm``, ``add_rmsnorm``): sound
             for *any* value-independent order at 10⁻⁹ per law run — over the random signs of the weights the partial
             sums of an unknown tree are random, and the sequential order's are nearly one Gaussian squared (their
             covariance's largest eigenvalue is 0.81 of its trace), so the tail is exponential: ~λ²/2 units;
  family     (SwiGLU; sums of squares have no random signs to condition away) a bound sound only for a declared
             family of orders (those of ``tests/numerics/orders.py``: sequential, reversed, lanes, pairwise, blocked,
             split-K), given the data: every dot product's partial sums at the family's worst Σ_ν S_ν² ÷ ((n − 1)·Σp²)
             over the case (printed beside it) instead of the union bound over the signs (``sites.SIGN_FACTOR``) or,
             for the last one, the sub-exponential c — Hoeffding given the data, a Gaussian tail;
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

import nanolm_core.modules
from properties.library.laws.stored import _cases
from properties.numerics import bounds, sites
from properties.numerics.bounds import tier as _tier
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
    saved = sites.Final.var, _tier.chaos_factor  # read where the tier's joint judge looks it up
    sites.Final.var = lambda self: np.minimum(self.q, factor * self.t)
    _tier.chaos_factor = lambda lam: lam * math.sqrt(factor)
    try:
        yield
    finally:
        sites.Final.var, _tier.chaos_factor = saved


def _swiglu(case) -> tuple:
    x, wg, wu, wd = (case.tensor(n) for n in ("x", "w_gate", "w_up", "w_down"))
    y = torch.nn.functional.linear(torch.nn.functional.silu(x @ wg.T) * (x @ wu.T), wd)
    tier = bounds.swiglu(x, wg, wu, wd, torch.float32, random_weights=True).allowed
    xd, gd, ud, dd = (t.double().numpy() for t in (x, wg, wu, wd))
    h = (xd @ gd.T) / (1 + np.exp(-(xd @ gd.T))) * (xd @ ud.T)  # W_down's input, exact to fp64
    ratio = max(family_ratio(xd, gd), family_ratio(xd, ud), family_ratio(h, dd))
    with conditional(ratio):
        family = bounds.swiglu(x, wg, wu, wd, torch.float32, random_weights=True).allowed
    emulated = [orders.swiglu(*(t.numpy() for t in (x, wg, wu, wd)), torch.float32, o)[0] for o in FAMILY]
    return y, tier, (family, ratio), emulated


def _rmsnorm(case, h: torch.Tensor | None = None, tier: np.ndarray | None = None) -> tuple:
    x, w, eps = case.tensor("x") if h is None else h, case.tensor("weight"), case.params["eps"]
    y = nanolm_core.modules.rms_norm(x, w, eps)
    if tier is None:
        tier = bounds.rmsnorm(x, w, eps, torch.float32, drawn=True).allowed
    emulated = [orders.rmsnorm(x.numpy(), w.numpy(), eps, torch.float32, o) for o in FAMILY]
    return y, tier, None, emulated  # (sums of squares: no random signs, no union over them to condition away)


def _add_rmsnorm(case) -> tuple:
    x, r, w, eps = case.tensor("x"), case.tensor("residual"), case.tensor("weight"), case.params["eps"]
    tier = bounds.add_rmsnorm(x, r, w, eps, torch.float32, drawn=True)[0].allowed
    return _rmsnorm(case, x + r, tier)  # h = x + r rounded once, then the norm of h


FAMILIES = {"swiglu": _swiglu, "rmsnorm": _rmsnorm, "add_rmsnorm": _add_rmsnorm}


def main() -> int:
    torch.set_num_threads(1)
    u = 2.0**-24
    print(f"{'case':<28} {'tier':>6} {'family':>12} {'empirical':>9}  worst order (tier headroom)")
    for name, compute in FAMILIES.items():
        for case in _cases(name):
            if case.dtype != torch.float32:
                continue
            gold = case.golden.hi + case.golden.lo
            y, tier, family, emulated = compute(case)
            err = np.abs(y.double().numpy() - gold)
            errs = [np.abs(e.astype(np.float64) - gold) for e in emulated]
            empirical = 2 * max(e.max() for e in errs) + 4 * u * np.abs(gold).max()
            worst = max(range(len(FAMILY)), key=lambda i: (errs[i] / tier).max())
            fam = "·" if family is None else f"{1 / (err / family[0]).max():.3g} ({family[1]:.2g})"
            at = f"{FAMILY[worst]} ({(errs[worst] / tier).max():.3g})"
            print(f"{name + ' ' + case.id:<28} {1 / (err / tier).max():6.3g} {fam:>12} "
                  f"{1 / (err / empirical).max():9.3g}  {at}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
