"""Assertion helpers of the laws: comparisons against golden and against derived bounds, bitwise checks.

Each helper hides itself from tracebacks, records what it measured (ULP error, worst input) for the
report through ``properties.library.context``, steers Hypothesis towards large errors with ``target()``, and
raises AssertionError with a message that reads like

    y: max ULP error 3.0 > bound 1.5 ULP = 0.5 + D·u_fp32/u_bf16 [RMSNorm, bf16, D=4096, cpu, rows: …]
      worst at (2, 17): golden 1.2345678, actual 1.25, |actual − golden| 0.0156 > allowed 0.0039
    reproduce: nanolm-verify check IMPL --only RMSNorm.rmsnorm_matches_golden --dtype bf16 …
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from hypothesis import event, target
from hypothesis.control import currently_in_test_context

from properties.library import context

__all__ = [
    "as_f64",
    "assert_bitwise_equal",
    "assert_close",
    "assert_finite",
    "assert_matches_golden",
    "assert_output_contract",
    "assert_unchanged",
    "fail",
    "golden_f64",
    "ulp_spacing",
]


def fail(message: str, cause: str = "law") -> None:
    """Raise the failure of ``cause`` (context.LawFailure …) with the regime and the reproduction line appended."""
    __tracebackhide__ = True
    ctx = context.current()
    if ctx is not None:
        message = f"{message} {ctx.regime()}\nreproduce: {ctx.repro}"
    raise _FAILURES[cause](message)


_FAILURES = {"law": context.LawFailure, "contract": context.ContractFailure, "crash": context.SubjectCrash}


def as_f64(t: torch.Tensor | np.ndarray) -> np.ndarray:
    """Exact float64 copy (every fp32/fp16/bf16 value is a float64) as a numpy array on the CPU."""
    if isinstance(t, np.ndarray):
        return t.astype(np.float64, copy=False)
    return t.detach().to("cpu", torch.float64).numpy()


def golden_f64(g: Any) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo) float64 arrays of a Golden (or of a plain array: lo = 0)."""
    if hasattr(g, "hi"):
        hi = np.asarray(g.hi, dtype=np.float64)
        lo = np.asarray(getattr(g, "lo", None) if getattr(g, "lo", None) is not None else np.zeros_like(hi))
        return hi, lo.astype(np.float64)
    hi = as_f64(g) if isinstance(g, torch.Tensor) else np.asarray(g, dtype=np.float64)
    return hi, np.zeros_like(hi)


_FORMAT = {  # precision p (with the hidden bit), e_min
    torch.float64: (53, -1022),
    torch.float32: (24, -126),
    torch.float16: (11, -14),
    torch.bfloat16: (8, -126),
}


def overflow_to_inf(hi: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """hi with the values that round to ±inf in ``dtype`` (|v| ≥ max + ulp(max)/2, IEEE) replaced by ±inf."""
    p, _ = _FORMAT[dtype]
    big = float(torch.finfo(dtype).max)
    limit = big + math.ldexp(1.0, math.frexp(big)[1] - 1 - p) if dtype != torch.float64 else math.inf
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(hi) >= limit, np.sign(hi) * np.inf, hi)


def ulp_spacing(values: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """Spacing of ``dtype`` at each value (fixed quantum below the normal range; inf/NaN → NaN)."""
    p, emin = _FORMAT[dtype]
    with np.errstate(divide="ignore", invalid="ignore"):
        _, e = np.frexp(np.abs(values))  # |v| = f·2^e, f ∈ [0.5, 1): ⌊log2|v|⌋ = e − 1
    e = np.maximum(e - 1, emin)
    out = np.ldexp(1.0, e - p + 1)
    return np.where(np.isfinite(values), out, np.nan)


def _ulp_error(actual: np.ndarray, hi: np.ndarray, lo: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """|actual − golden| / spacing(golden); 0 where both are the same inf, inf where one is non-finite."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs((actual - hi) - lo)
        err = diff / ulp_spacing(hi, dtype)
    same_inf = np.isinf(actual) & (actual == hi)
    return np.where(same_inf, 0.0, np.where(np.isfinite(err), err, np.inf))


def _fmt(v: float) -> str:
    return f"{v:.9g}" if isinstance(v, float) else str(v)


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def assert_output_contract(
    y: Any,
    *,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: str | torch.device,
    what: str = "output",
    cause: str = "contract",
) -> None:
    """y is a tensor of the given shape, dtype and device type (a contract failure, unless the law is about it)."""
    __tracebackhide__ = True
    if not isinstance(y, torch.Tensor):
        fail(f"{what}: expected a torch.Tensor, got {type(y).__name__}", cause)
    problems = []
    if tuple(y.shape) != tuple(shape):
        problems.append(f"shape {tuple(y.shape)} ≠ {tuple(shape)}")
    if y.dtype != dtype:
        problems.append(f"dtype {y.dtype} ≠ {dtype}")
    if y.device.type != torch.device(device).type:
        problems.append(f"device {y.device} ≠ {device}")
    if problems:
        fail(f"{what}: " + "; ".join(problems), cause)


def assert_matches_golden(
    actual: torch.Tensor,
    golden: Any,
    bound: Any,
    *,
    what: str = "y",
    record: bool = True,
) -> float:
    """|actual − golden| ≤ bound.abs elementwise (golden: Golden hi+lo; bound: Bound with abs/ulps/formula).

    Records max and p99 ULP error and the worst element; returns the max ULP error.
    """
    __tracebackhide__ = True
    dtype = actual.dtype
    hi, lo = golden_f64(golden)
    a = as_f64(actual)
    if a.shape != hi.shape:
        fail(f"{what}: shape {a.shape} ≠ golden shape {hi.shape}")
    hi = overflow_to_inf(hi, dtype)  # a golden beyond the dtype's range rounds to ±inf (RNE)
    lo = np.where(np.isinf(hi), 0.0, lo)
    allowed = np.broadcast_to(np.asarray(bound.abs, dtype=np.float64), hi.shape)
    err_ulp = _ulp_error(a, hi, lo, dtype)
    with np.errstate(invalid="ignore"):
        diff = np.abs((a - hi) - lo)
    both_nan = np.isnan(a) & np.isnan(hi)
    same_inf = np.isinf(a) & (a == hi)
    ok = both_nan | same_inf | (diff <= allowed) | _undetermined(allowed, dtype)
    return _judge(
        a,
        hi,
        err_ulp,
        diff,
        allowed,
        ok,
        dtype,
        what,
        getattr(bound, "formula", "derived bound"),
        golden_name="golden",
        record=record,
    )


def assert_close(
    actual: torch.Tensor | np.ndarray,
    expected: torch.Tensor | np.ndarray,
    allowed: np.ndarray | float,
    *,
    formula: str,
    what: str,
    expected_name: str = "expected",
    dtype: torch.dtype | None = None,
) -> float:
    """|actual − expected| ≤ allowed elementwise (an invariant with a derived rounding bound).

    With ``dtype`` the error is also expressed in ULPs of that dtype (and returned); without, the quantity is
    a derived one (a norm, a row sum) and the message gives absolute errors only.
    """
    __tracebackhide__ = True
    in_ulps = dtype is not None
    dtype = dtype or torch.float64
    a, e = as_f64(actual), as_f64(expected) if isinstance(expected, torch.Tensor) else np.asarray(expected, np.float64)
    if a.shape != e.shape:
        fail(f"{what}: shape {a.shape} ≠ {expected_name} shape {e.shape}")
    allowed = np.broadcast_to(np.asarray(allowed, dtype=np.float64), e.shape)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
    ok = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e)) | (diff <= allowed) | _undetermined(allowed, dtype)
    err_ulp = _ulp_error(a, e, np.zeros_like(e), dtype)
    return _judge(
        a, e, err_ulp, diff, allowed, ok, dtype, what, formula, golden_name=expected_name, record=False, in_ulps=in_ulps
    )


def _undetermined(allowed: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """Elements whose bound is infinite: an intermediate of the computation may overflow ``dtype`` (e.g. the hidden
    units of an fp16 SwiGLU), so no value — inf and NaN included — is wrong there. They are not judged, and said so."""
    undetermined = np.isinf(allowed)
    if undetermined.any() and currently_in_test_context():
        event(f"not judged: an intermediate may overflow {dtype} (infinite bound)")
    return undetermined


def _judge(
    a: np.ndarray,
    g: np.ndarray,
    err_ulp: np.ndarray,
    diff: np.ndarray,
    allowed: np.ndarray,
    ok: np.ndarray,
    dtype: torch.dtype,
    what: str,
    formula: str,
    golden_name: str,
    record: bool = True,
    in_ulps: bool = True,
) -> float:
    __tracebackhide__ = True
    judged = np.isfinite(g) & np.isfinite(allowed)  # infinite bound: not determined in this dtype (_undetermined)
    finite = err_ulp[judged] if err_ulp.size else err_ulp
    max_ulp = float(finite.max()) if finite.size else 0.0
    with np.errstate(invalid="ignore"):
        p99 = float(np.percentile(np.minimum(finite, 1e300), 99)) if finite.size else 0.0
    if record:
        worst = int(np.argmax(np.where(judged, err_ulp, -1.0))) if err_ulp.size else 0
        context.record_error(
            max_ulp,
            p99,
            worst_index=_index(worst, a.shape),
            worst_golden=float(g.flat[worst]) if a.size else None,
            worst_actual=float(a.flat[worst]) if a.size else None,
        )
        if currently_in_test_context():
            target(min(max_ulp, 1e30), label=f"ULP error of {what}")
    if bool(np.all(ok)):
        return max_ulp
    bad = ~ok
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.where(bad, np.nan_to_num(diff / np.maximum(allowed, 1e-300), nan=np.inf, posinf=np.inf), -1)
    i = int(np.argmax(excess))
    spacing = ulp_spacing(g.flat[i : i + 1], dtype)[0]
    bound_ulp = allowed.flat[i] / spacing if spacing and np.isfinite(spacing) else float("nan")
    head = (
        f"ULP error {err_ulp.flat[i]:.4g} > bound {bound_ulp:.4g} ULP"
        if in_ulps
        else f"|actual − {golden_name}| {diff.flat[i]:.4g} > allowed {allowed.flat[i]:.4g}"
    )
    fail(
        f"{what}: {head} (= {formula}); {int(bad.sum())} of {bad.size} elements out of bound\n"
        f"  worst at {_index(i, a.shape)}: {golden_name} {_fmt(float(g.flat[i]))}, actual {_fmt(float(a.flat[i]))}, "
        f"|actual − {golden_name}| {diff.flat[i]:.4g} > allowed {allowed.flat[i]:.4g}"
        + (f"\n  max ULP error over all elements {max_ulp:.4g}" if in_ulps else "")
    )
    return max_ulp


def assert_bitwise_equal(
    actual: torch.Tensor, expected: torch.Tensor, *, what: str, why: str = "", zeros_signed: bool = False
) -> None:
    """actual == expected value for value (NaN == NaN; +0 == −0 unless ``zeros_signed``), same shape."""
    __tracebackhide__ = True
    if tuple(actual.shape) != tuple(expected.shape):
        fail(f"{what}: shape {tuple(actual.shape)} ≠ {tuple(expected.shape)}")
    a, e = as_f64(actual), as_f64(expected)
    eq = (a == e) | (np.isnan(a) & np.isnan(e))
    if zeros_signed:
        eq &= np.signbit(a) == np.signbit(e)
    if bool(np.all(eq)):
        return
    i = int(np.argmin(eq.reshape(-1)))
    fail(
        f"{what}: not bitwise equal{' (' + why + ')' if why else ''}: {int((~eq).sum())} of {eq.size} elements "
        f"differ; first at {_index(i, a.shape)}: expected {_fmt(float(e.flat[i]))}, actual {_fmt(float(a.flat[i]))}"
    )


def assert_unchanged(before: torch.Tensor, after: torch.Tensor, *, what: str) -> None:
    """A tensor the implementation received is bitwise what it was before the call.

    (A parameter the implementation keeps in another dtype — fp32 master weights — is compared by value.)
    """
    __tracebackhide__ = True
    after = after.detach().to(before.device)
    if before.dtype != after.dtype:
        assert_bitwise_equal(after, before, what=f"{what} was modified by the call", zeros_signed=True)
        return
    same = before.shape == after.shape and bool(
        torch.equal(before.view(_int_view(before.dtype)), after.view(_int_view(after.dtype)))
    )
    if not same:
        assert_bitwise_equal(after, before, what=f"{what} was modified by the call", zeros_signed=True)
        fail(f"{what} was modified by the call (bit patterns differ)")


def _int_view(dtype: torch.dtype) -> torch.dtype:
    return {8: torch.int64, 4: torch.int32, 2: torch.int16}[torch.empty((), dtype=dtype).element_size()]


def assert_finite(y: torch.Tensor, *, what: str, mask: np.ndarray | None = None) -> None:
    """Every (selected) element of y is finite."""
    __tracebackhide__ = True
    a = as_f64(y)
    bad = ~np.isfinite(a) if mask is None else (~np.isfinite(a) & mask)
    if bool(bad.any()):
        i = int(np.argmax(bad.reshape(-1)))
        fail(f"{what}: {int(bad.sum())} non-finite element(s), first at {_index(i, a.shape)}: {a.flat[i]}")


def gamma_n(n: int, u: float) -> float:
    """γ_n = n·u / (1 − n·u): the classic bound on n accumulated roundings (Higham §3.1)."""
    return n * u / (1 - n * u) if n * u < 0.5 else math.inf
