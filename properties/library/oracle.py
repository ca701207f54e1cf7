"""The laws' oracles: golden values and derived bounds (golden/ and properties.bounds), plus the bounds the
laws derive themselves (gradients, the elementwise SwiGLU gate) by running error analysis.

Running error analysis (Higham, ch. 3): every intermediate q carries a magnitude |q| and an error bound e_q;
rounding to the storage dtype adds u_s·|q| + η_s (η_s: its smallest subnormal, for underflow), a sum of n
products accumulated in a compute precision u_c adds γ_n(u_c)·Σ|terms|, and errors propagate through
linear maps by their absolute values and through silu by sup|silu'| < 1.1 and sup|silu''| ≤ 1/2. The bound
covers every accepted convention at once: compute in fp32 (or better) for 16-bit storage, with each named
intermediate rounded to the storage dtype at most once (HF's twice-rounded bf16 SwiGLU), any summation order.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

import golden
from properties.library.assertions import as_f64, gamma_n
from properties.numerics import bounds

__all__ = [
    "DerivedBound",
    "compute_roundoff",
    "eta",
    "rmsnorm_vjp_bounds",
    "silu_gate_bound",
    "swiglu_vjp_bounds",
    "unit_roundoff",
]

_U = {torch.float64: 2.0**-53, torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
_ETA = {torch.float64: 2.0**-1074, torch.float32: 2.0**-149, torch.float16: 2.0**-24, torch.bfloat16: 2.0**-133}
SILU_LIP, SILU2_LIP = 1.1, 0.5  # sup|silu'| ≈ 1.0998, sup|silu''| = silu''(0) = 1/2


def unit_roundoff(dtype: torch.dtype) -> float:
    """u = 2^-p of the storage dtype: fp64 2^-53, fp32 2^-24, fp16 2^-11, bf16 2^-8."""
    return _U[dtype]


def compute_roundoff(dtype: torch.dtype) -> float:
    """u_c: the unit roundoff of the accepted compute precision (fp32 or better for 16-bit storage)."""
    return min(_U[dtype], _U[torch.float32])


def eta(dtype: torch.dtype) -> float:
    """The smallest positive subnormal of ``dtype`` (absolute error of a rounding that underflows ≤ η/2)."""
    return _ETA[dtype]


@dataclasses.dataclass
class DerivedBound:
    """An elementwise absolute bound with its formula (the shape of properties.bounds.Bound)."""

    abs: np.ndarray
    formula: str


# -------------------------------------------------------------------------------------------- golden + bounds


def golden_module() -> Any:
    return golden


def bounds_module() -> Any:
    return bounds


def golden_rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> Any:
    return golden_module().rmsnorm(x, w, eps)


def bound_rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float, dtype: torch.dtype) -> Any:
    return bounds_module().rmsnorm(x, w, eps, dtype)


def golden_swiglu(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor) -> Any:
    return golden_module().swiglu(x, wg, wu, wd)


def bound_swiglu(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor, dtype: torch.dtype) -> Any:
    return bounds_module().swiglu(x, wg, wu, wd, dtype)


# -------------------------------------------------------------------------------------------- derived bounds


def rmsnorm_vjp_bounds(
    x: torch.Tensor,
    w: torch.Tensor,
    eps: float,
    g: torch.Tensor,
    dx_golden: np.ndarray,
    dw_golden: np.ndarray,
    dtype: torch.dtype,
) -> tuple[DerivedBound, DerivedBound]:
    """Bounds for dx and dw of y = x·r·w, r = (mean(x²) + eps)^-1/2, cotangent g.

    dx_i = r·w_i·g_i − (r³/D)·x_i·Σ_j x_j·w_j·g_j, dw_j = Σ_rows r·x_j·g_j. With M the same sums of absolute
    values (×3: r enters cubed), |error| ≤ u_s·|golden| + (3·u_s + γ_{n}(u_c))·3·M + 4·η_s, n = D + N + 8.
    """
    xs, ws, gs = as_f64(x).reshape(-1, x.shape[-1]), as_f64(w), as_f64(g).reshape(-1, x.shape[-1])
    N, D = xs.shape
    r = 1.0 / np.sqrt((xs**2).mean(axis=-1, keepdims=True) + eps)  # (N, 1)
    m_dx = r * np.abs(ws * gs) + r**3 / D * np.abs(xs) * np.abs(xs * ws * gs).sum(axis=-1, keepdims=True)
    m_dw = (r * np.abs(xs * gs)).sum(axis=0)
    u, uc, e = unit_roundoff(dtype), compute_roundoff(dtype), eta(dtype)
    rel = 3 * u + gamma_n(D + N + 8, uc)
    dx = u * np.abs(dx_golden).reshape(N, D) + rel * 3 * m_dx + 4 * e
    dw = u * np.abs(dw_golden) + rel * 3 * m_dw + 4 * e
    sym = f"u_s={u:.3g}, u_c={uc:.3g}, D={D}, N={N}"
    return (
        DerivedBound(dx.reshape(x.shape), f"u_s·|dx| + (3u_s + γ_(D+N+8)(u_c))·3·M_dx + 4η [{sym}]"),
        DerivedBound(dw, f"u_s·|dw| + (3u_s + γ_(D+N+8)(u_c))·3·Σ_rows r|x g| + 4η [{sym}]"),
    )


def _silu(a: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return a / (1.0 + np.exp(-a))


def _dsilu(a: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        s = 1.0 / (1.0 + np.exp(-a))
    return s * (1 + a * (1 - s))


def swiglu_vjp_bounds(
    x: torch.Tensor,
    wg: torch.Tensor,
    wu: torch.Tensor,
    wd: torch.Tensor,
    g: torch.Tensor,
    goldens: tuple[np.ndarray, ...],
    dtype: torch.dtype,
) -> tuple[DerivedBound, ...]:
    """Bounds for (dx, dW_gate, dW_up, dW_down) of y = W_d(silu(W_g x) ⊙ W_u x) by running error analysis.

    Intermediates a = W_g x, b = W_u x, s = silu(a), h = s⊙b, dh = W_dᵀg, ds = dh⊙b, da = ds⊙silu'(a),
    db = dh⊙s may each be rounded to the storage dtype; sums are accumulated in u_c (see module docstring).
    """
    D = x.shape[-1]
    xs, gs = as_f64(x).reshape(-1, D), as_f64(g).reshape(-1, D)
    Wg, Wu, Wd = as_f64(wg), as_f64(wu), as_f64(wd)
    N, F = xs.shape[0], Wg.shape[0]
    u, uc, e = unit_roundoff(dtype), compute_roundoff(dtype), eta(dtype)
    aX = np.abs(xs)
    a, b = xs @ Wg.T, xs @ Wu.T
    ea = u * np.abs(a) + gamma_n(D, uc) * (aX @ np.abs(Wg).T) + e
    eb = u * np.abs(b) + gamma_n(D, uc) * (aX @ np.abs(Wu).T) + e
    s, s1 = _silu(a), _dsilu(a)
    es = (u + 4 * uc) * np.abs(s) + SILU_LIP * ea + e
    h = s * b
    eh = u * np.abs(h) + np.abs(s) * eb + np.abs(b) * es + e
    dh = gs @ Wd
    edh = u * np.abs(dh) + gamma_n(D, uc) * (np.abs(gs) @ np.abs(Wd)) + e
    ds = dh * b
    eds = u * np.abs(ds) + np.abs(dh) * eb + np.abs(b) * edh + e
    da = ds * s1
    eda = u * np.abs(da) + np.abs(s1) * eds + np.abs(ds) * ((u + 4 * uc) * np.abs(s1) + SILU2_LIP * ea) + e
    db = dh * s
    edb = u * np.abs(db) + np.abs(dh) * es + np.abs(s) * edh + e
    aWg, aWu = np.abs(Wg), np.abs(Wu)
    edx = (
        u * (np.abs(da @ Wg) + np.abs(db @ Wu))
        + gamma_n(F, uc) * (np.abs(da) @ aWg + np.abs(db) @ aWu)
        + eda @ aWg
        + edb @ aWu
        + e
    )
    edWd = gamma_n(N, uc) * (np.abs(gs).T @ np.abs(h)) + np.abs(gs).T @ eh + e
    edWg = gamma_n(N, uc) * (np.abs(da).T @ aX) + eda.T @ aX + e
    edWu = gamma_n(N, uc) * (np.abs(db).T @ aX) + edb.T @ aX + e
    safety = 1 + 16 * u  # second-order terms of the first-order analysis
    sym = f"u_s={u:.3g}, u_c={uc:.3g}, D={D}, F={F}, N={N}"
    out = []
    for name, err, gold, shape in (
        ("dx", edx, goldens[0], x.shape),
        ("dW_gate", edWg, goldens[1], wg.shape),
        ("dW_up", edWu, goldens[2], wu.shape),
        ("dW_down", edWd, goldens[3], wd.shape),
    ):
        total = (u * np.abs(np.asarray(gold)).reshape(err.shape) + err) * safety
        out.append(
            DerivedBound(
                total.reshape(shape),
                f"u_s·|{name}| + running error bound of the SwiGLU backward "
                f"(intermediates rounded to storage, sums in u_c) [{sym}]",
            )
        )
    return tuple(out)


def silu_gate_bound(x: np.ndarray, golden: np.ndarray, dtype: torch.dtype) -> DerivedBound:
    """Bound for y = silu(x)·x computed as up to three roundings (σ, silu, product) in ``dtype``.

    |ŷ − y| ≤ γ₃·|y| + (1+u)²·x²·η/2 + (1+u)·|x|·η/2 + η/2, γ₃ = (1+u)³(1+4u_c) − 1: relative error of three
    roundings plus the fp32 evaluation of σ, and the absolute error of an intermediate that underflows; and
    |y| itself where x < −ln(fp32 max) ≈ −88.72: there x/(1 + e^−x) in fp32 gives 0 (e^−x overflows), as
    torch's silu kernel does.
    """
    u, uc, e = unit_roundoff(dtype), compute_roundoff(dtype), eta(dtype)
    g3 = (1 + u) ** 3 * (1 + 4 * uc) - 1
    flush = np.where(x < -np.log(float(torch.finfo(torch.float32).max)), np.abs(golden), 0.0)
    x = np.abs(x)
    allowed = g3 * np.abs(golden) + (1 + u) ** 2 * x * x * e / 2 + (1 + u) * x * e / 2 + e / 2 + flush
    return DerivedBound(
        allowed,
        f"γ₃·|y| + (1+u)²·x²·η/2 + (1+u)·|x|·η/2 + η/2 (+|y| for x < −88.72), "
        f"γ₃ = (1+u)³(1+4u_c) − 1 [u={u:.3g}, u_c={uc:.3g}, η={e:.3g}]",
    )
