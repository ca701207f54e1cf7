"""AddRMSNorm's bounds: h = x + r and y = RMSNorm(h) (:func:`add_rmsnorm`, :func:`add_rmsnorm_from_h`) and
the VJP (:func:`add_rmsnorm_vjp`), through RMSNorm's analysis at the sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from golden.formats import fmt
from properties.numerics import sites
from properties.numerics.bounds.arithmetic import (
    _P,
    _shadows,
)
from properties.numerics.bounds.bound import Bound
from properties.numerics.bounds.norm import _rmsnorm_e, rmsnorm, rmsnorm_vjp
from properties.numerics.bounds.propagation import (
    _E,
    _add,
    _finish,
    _given,
    _given_error,
    _round,
    _row_overflow,
)
from properties.numerics.ulp import as_f64 as _exact  # the one tensor → float64 conversion

# ------------------------------------------------------------------------------------- AddRMSNorm
# h = x + r and y = RMSNorm(h), judged against the golden values of the exact sum (golden.add_rmsnorm). Two orders
# are accepted and a module may declare one (``norm_input``): the norm reads the h it returns, rounded to t (unfused:
# vLLM's fused_add_rms_norm, Liger), or the unrounded sum in c (fused fp32 kernels, ONNX Runtime's skip norm).
ADD_RMSNORM_FORMULA = (
    "the RMSNorm bound of a norm that reads ĥ, |ĥ − h| ≤ e: e = ½·ulp_t(h) (rounded h) | u_c·|h| (the sum in c) | "
    "their maximum (undeclared)"
)


def _sum_bound(X: np.ndarray, R: np.ndarray, p: _P) -> tuple[Bound, np.ndarray]:
    """(bound of the stored h, the error e of the ĥ its norm reads). The sum in c errs by u_c·|h| (an addition has
    no underflow error: a sum in the subnormal range is exact) plus the errors of x and r as declared (demoted,
    flushed: :func:`_given`). Stored in t it is correctly rounded — c holds ≥ 2p_t + 2 bits, so rounding in c, then
    to t, is one rounding (½ ULP) — unless declared inputs err (then the rounding in c counts too); demoted, the
    sum in c is stored exactly."""
    H = X + R  # float64 (a float64 sum of fp64 inputs errs by 2^-53 relative: far below every allowance here)
    given = _add(_given(X, p), _given(R, p))
    in_c = _round(given, p.uc)
    exact_in = _given_error(X, p) is None and _given_error(R, p) is None
    stored = in_c if p.demoted or (p.narrow and not exact_in) else given
    hb = _finish(stored, p, "add_rmsnorm.h", "½·ulp_t(h): x + r rounded once", f"D={H.shape[-1]}")
    rounded, summed = hb.abs, in_c.ea  # what an unfused and a fused norm read
    e = {"rounded": rounded, "sum": summed}.get(p.a.norm_input or "", np.maximum(rounded, summed))
    return hb, e


@_shadows
def add_rmsnorm(
    x: Any, residual: Any, weight: Any, eps: float, dtype: Any, *, drawn: bool = False
) -> tuple[Bound, Bound]:
    """Bounds for AddRMSNorm (y, h) against golden.add_rmsnorm: h = x + r, y = RMSNorm of the exact sum.

    h: one addition, correctly rounded to t (a rounding in c ≥ 2p_t + 2 bits then to t is one rounding): ½ ULP.
    y: :func:`rmsnorm`'s analysis of a norm whose input ĥ errs by e per element — ĥ = fl_t(h), e = ½·ulp_t(h)
    (unfused), or ĥ = fl_c(x + r), e = u_c·|h| (fused), the larger when the module declares neither — propagated
    through r = (Σĥ²/D + ε)^-½ and ĥ·r·w (first order, both terms). Rows where h overflows t are not judged (an
    unfused norm reads ±inf there).

    ``drawn`` (the law's own random inputs, undeclared): rows of h that pass ``sites.model_rows`` are judged by
    the probabilistic tier too: the norm's own roundings (``sites.rmsnorm`` at h) and ĥ_i = h_i(1 + δ_i),
    |δ_i| ≤ max(u_t, u_c) independent, through ∂y_j/∂h_i = r·w_j(δ_ij − h_i h_j r²/D):
    var y_j += y_j²·u²·(1 − 2a_j + Σ_i a_i²), a_i = r²h_i²/D.
    """
    p = _P(fmt(dtype).dtype)
    X, R, w = _exact(x), _exact(residual), _exact(weight)
    hb, e = _sum_bound(X, R, p)
    h = X + R
    y, sq_over = _rmsnorm_e(_E(h, e, e), w, float(eps), p)
    over = _row_overflow([h, y.v], p, X.shape[:-1]) | sq_over
    ov = over[..., None] & np.ones(X.shape, dtype=bool)
    declared = p.a.norm_input or "either"
    var = None
    model = drawn and not p.tier_off and sites.model_rows(h, fmt(p.c).smallest_normal, p.uc)
    if np.any(model):
        with np.errstate(all="ignore"):
            yv, own = sites.rmsnorm(h, w, float(eps), p, x_err=e)  # the ĥ it reads: within ±e of h
            a = h * h / (np.mean(h * h, axis=-1, keepdims=True) + float(eps)) / h.shape[-1]
            sum_in = yv * yv * max(p.ut, p.uc) ** 2 * (1 - 2 * a + np.sum(a * a, axis=-1, keepdims=True))
        var = np.where(model[..., None], own + sum_in, np.inf)
    text = f"{ADD_RMSNORM_FORMULA} [{declared}]"
    yb = _finish(y, p, "add_rmsnorm.y", text, f"D={X.shape[-1]}", overflow=ov, var=var, tier_wanted=drawn)
    return yb, hb


@_shadows
def add_rmsnorm_from_h(h: Any, weight: Any, eps: float, dtype: Any) -> Bound:
    """Bound for AddRMSNorm's y against the golden RMSNorm of the h it *returned* (h_t, exact in t).

    A norm reading h_t is RMSNorm of h_t: :func:`rmsnorm`'s bound. A fused norm reads ŝ = fl_c(x + r) instead,
    |ŝ − h_t| ≤ |ŝ − s| + |s − h_t| ≤ (u_c + u_t)·|s| ≤ (u_c + u_t)·|h_t|/(1 − u_t) for 16-bit t; where c is t (or
    narrower: declared) ŝ is h_t itself. Declared "rounded": the plain RMSNorm bound."""
    p = _P(fmt(dtype).dtype)
    H, w = _exact(h), _exact(weight)
    if p.a.norm_input == "rounded" or not p.narrow:
        return rmsnorm(H, w, eps, dtype)
    with np.errstate(invalid="ignore"):
        e = np.nan_to_num((p.uc + p.ut) * np.abs(H) / (1 - p.ut), nan=np.inf)
    y, sq_over = _rmsnorm_e(_E(H, e, e), w, float(eps), p)
    over = (_row_overflow([H, y.v], p, H.shape[:-1]) | sq_over)[..., None] & np.ones(H.shape, dtype=bool)
    text = "the RMSNorm bound of a norm reading ĥ, |ĥ − h| ≤ (u_c + u_t)·|h|/(1 − u_t) (a fused sum in c)"
    return _finish(y, p, "add_rmsnorm.y", text, f"D={H.shape[-1]}", overflow=over)


@_shadows
def add_rmsnorm_vjp(
    x: Any, residual: Any, weight: Any, eps: float, grad_y: Any, grad_h: Any, dtype: Any
) -> tuple[Bound, Bound]:
    """Bounds for AddRMSNorm's VJP (d for x and for the residual — one gradient —, dw) against golden.add_rmsnorm_vjp:
    :func:`rmsnorm_vjp` at the sum h, read within the forward's e (:func:`add_rmsnorm`), with g_h added to dx."""
    p = _P(fmt(dtype).dtype)
    X, R = _exact(x), _exact(residual)
    _, e = _sum_bound(X, R, p)
    return rmsnorm_vjp(X + R, weight, eps, grad_y, dtype, x_error=e, grad_in=grad_h)
