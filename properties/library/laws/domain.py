"""The documented domain limit of RMSNorm: rows whose sum of squares overflows the compute dtype.

y = x/√(mean(x²)+ε)·γ is finite and of order |γ| for every finite x, but every accepted way of computing it
forms Σx² (or mean(x²)) in the compute dtype c — fp32 for fp16/bf16/fp32 input, fp64 for fp64, or the one the
implementation declares (``bounds.compute_dtype``, the one policy) — and that sum
overflows once Σx²·(1 + D·u_c) > max_c: for a row of equal entries, |x| > √(max_c/D) ≈ 1.8·10¹⁹/√D in
fp32/bf16 and 1.3·10¹⁵⁴/√D in fp64. Beyond it torch's own ``F.rms_norm`` returns 0 (a row of 1e20 in fp32);
a kernel that pre-scales the row by its max would be exact. Neither is wrong: the row is outside the domain
the contract's numerics policy can serve, and ``bounds.rmsnorm`` marks it not judged (``Bound.overflow``).

This law makes the limit explicit instead of silent: up to the threshold (Σx² at 2^-1 … 2^-8 of it) the
result must match golden within the bound; beyond it (Σx² at 2 … 2^8 times it, x itself finite) what the
implementation returns is *recorded* — rows returned as zeros, as non-finite values, or within 4·u_c relative
of golden — as a measurement, never judged. fp16 input cannot reach the threshold (65504²·D ≪ max_fp32): there
rows at the top of fp16's range (|x| up to 65504, x² far past fp16's range) must match golden. Its cases and the
threshold they are placed at: ``strategies.domain_cases``, ``strategies.overflow_threshold``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

import golden
from golden.formats import fmt
from properties.library import protocols
from properties.library import strategies as S
from properties.library.assertions import as_f64, assert_matches_golden
from properties.library.context import current, measure
from properties.library.harness import note
from properties.library.laws.rmsnorm import rmsnorm_forward
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

AXIS = "domain limits: inputs up to and past the compute dtype's range"  # its column in the matrix
DType = torch.dtype
Data = st.DataObject


def _tally(outside: np.ndarray, y: np.ndarray, gold: np.ndarray, u: float) -> None:
    """Add the behaviour of the rows beyond the threshold to the run's measurements (reported, not judged)."""
    ctx = current()
    if ctx is None or not outside.any():
        return
    seen = dict(ctx.recorder.measurements.get("beyond the overflow threshold (rows)", {}))
    for row, g in zip(y[outside], gold[outside], strict=True):
        if not np.isfinite(row).all():
            kind = "non-finite"
        elif not row.any():
            kind = "zeros (as F.rms_norm)"
        elif np.all(np.abs(row - g) <= 4 * u * np.abs(g) + 1e-300):
            kind = "correct (within 4·u_c)"
        else:
            kind = "other"
        seen[kind] = seen.get(kind, 0) + 1
    measure("beyond the overflow threshold (rows)", seen)


def _judged_rows(dc: Any, dtype: DType) -> tuple[Any, np.ndarray]:
    """bounds.rmsnorm of the case and the rows beyond its domain (where Σx² overflows the compute dtype)."""
    c = dc.case
    with np.errstate(over="ignore", invalid="ignore"):  # Σx² overflows float64 itself beyond the fp64 threshold
        b = bounds.rmsnorm(c.x, c.weight, c.eps, dtype)
    outside = np.asarray(b.overflow).any(axis=-1) if b.overflow is not None else np.zeros(len(dc.log2_ratio), bool)
    inside_ks = [k for k, o in zip(dc.log2_ratio, outside, strict=True) if not o]
    if inside_ks and max(inside_ks) > 0:  # the bound's own criterion must agree with the construction
        raise RuntimeError(f"suite: a row at 2^{max(inside_ks)}·threshold is judged by bounds.rmsnorm")
    return b, outside


@law("RMSNorm", cost=4)
@given(data=st.data())
@example(data=S.DOMAIN_PINS["equal rows at the threshold, 1e20"])
@protocols.honoured(protocols.FORWARD)  # drawn only: the law's own rows are the regime
def rmsnorm_is_exact_up_to_the_overflow_threshold(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Rows up to the domain limit Σx²·(1 + D·u_c) ≤ max_c (|x| ≤ √(max_c/D) for equal entries; c = fp32, fp64
    for fp64) match golden within bounds.rmsnorm; beyond it the result is recorded (zeros, non-finite, correct),
    not judged — a documented domain limit, never a silent exclusion. fp16 never reaches it: up to |x| = 65504."""
    dc = data.draw(S.domain_cases(dtype), label="case")
    note(dc)
    c = dc.case
    y = rmsnorm_forward(impl, c.x, c.weight, c.eps, dtype, device)
    exact = golden.rmsnorm(c.x, c.weight, c.eps)
    b, outside = _judged_rows(dc, dtype)
    assert_matches_golden(y, exact, b, what="y up to the overflow threshold", record=False)
    rows = len(outside), -1
    _tally(outside, as_f64(y).reshape(rows), exact.float64().reshape(rows), fmt(bounds.compute_dtype(dtype)).u)
