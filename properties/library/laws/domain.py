"""The documented domain limit of a norm: rows whose sum of squares overflows the compute dtype.

One generic family (``families``), one law per component record whose first output normalises rows
(``record.domain``: the drawn rows at the threshold → the component's own case whose norm reads them; AddRMSNorm:
the stream, the branch zero, so h = x + r is those rows exactly): ``<component>_is_exact_up_to_the_overflow_
threshold``. For RMSNorm:

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
threshold they are placed at: ``strategies.domain_cases``, ``strategies.overflow_threshold``. Every other
output (AddRMSNorm's h) is judged against its golden value and bound on every row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from golden.formats import fmt
from properties.library import components, protocols
from properties.library import strategies as S
from properties.library.assertions import as_f64, assert_matches_golden, assert_output_matches
from properties.library.context import current, measure
from properties.library.families import family, named
from properties.library.harness import note
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


def _judged_rows(dc: Any, b: Any) -> np.ndarray:
    """The rows beyond the domain (where Σx² overflows the compute dtype), as the first output's bound ``b`` marks
    them — which must agree with the construction (a row placed past the threshold is never judged)."""
    outside = np.asarray(b.overflow).any(axis=-1) if b.overflow is not None else np.zeros(len(dc.log2_ratio), bool)
    inside_ks = [k for k, o in zip(dc.log2_ratio, outside, strict=True) if not o]
    if inside_ks and max(inside_ks) > 0:  # the bound's own criterion must agree with the construction
        raise RuntimeError(f"suite: a row at 2^{max(inside_ks)}·threshold is judged by the bound")
    return outside


def _judge_domain(rec: components.Component, impl: Implementation, dc: Any, dtype: DType, device: str) -> None:
    """The first output within its bound of golden on the rows inside the domain, the rows beyond it recorded; every
    other output within its bound on every row."""
    __tracebackhide__ = True
    case = rec.as_case(dc.case)
    outs = rec.forward(impl, case, dtype, device)
    golds = rec.golden(case)
    with np.errstate(over="ignore", invalid="ignore"):  # Σx² overflows float64 itself past the fp64 threshold
        bnds = rec.bounds(case, dtype)
    outside = _judged_rows(dc, bnds[0])
    what = f"{rec.outputs[0]} up to the overflow threshold"
    assert_matches_golden(outs[0], golds[0], bnds[0], what=what, record=False)
    for name, out, gold, b in zip(rec.outputs[1:], outs[1:], golds[1:], bnds[1:], strict=True):
        assert_output_matches(out, gold, b, what=f"{name} of rows up to and past the threshold", record=False)
    rows = len(outside), -1
    y, exact = as_f64(outs[0]).reshape(rows), golds[0].float64().reshape(rows)
    _tally(outside, y, exact, fmt(bounds.compute_dtype(dtype)).u)


def _statement(rec: components.Component) -> str:
    first, rest = rec.outputs[0], rec.outputs[1:]
    others = f"; {', '.join(rest)} within its bound of golden on every row" if rest else ""
    return (
        f"Rows whose sum of squares is up to the domain limit Σx²·(1 + D·u_c) ≤ max_c (|x| ≤ √(max_c/D) for equal "
        f"entries; c = fp32, fp64 for fp64) give {first} within the record's bound of golden; beyond it the result "
        f"is recorded (zeros, non-finite, correct), not judged — a documented domain limit, never a silent "
        f"exclusion. fp16 never reaches it: up to |x| = 65504{others}."
    )


@family(
    "domain",
    axis=AXIS,
    reason=lambda rec: None if rec.domain is not None else "no norm over its input rows (its record's ``domain``)",
)
def _domain(rec: components.Component) -> tuple[str, ...]:
    def is_exact_up_to_the_overflow_threshold(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
        dc = data.draw(S.domain_cases(dtype), label="case")
        dc = dc._replace(case=rec.domain(dc.case))
        note(dc)
        _judge_domain(rec, impl, dc, dtype, device)

    fn = named(
        is_exact_up_to_the_overflow_threshold, f"{rec.snake}_is_exact_up_to_the_overflow_threshold", _statement(rec)
    )
    fn = protocols.honoured(protocols.FORWARD)(fn)  # drawn only: the law's own rows are the regime
    fn = example(data=S.DOMAIN_PINS["equal rows at the threshold, 1e20"])(fn)
    law(rec.name, cost=4)(given(data=st.data())(fn))
    return (f"{rec.name}.{fn.__name__}",)
