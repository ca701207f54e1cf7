"""Assertion helpers of the laws: comparisons against golden and against derived bounds, bitwise checks.

Each helper hides itself from tracebacks, records what it measured (ULP error, worst input, headroom) for the
report through ``properties.library.context``, steers Hypothesis towards large errors with ``target()``, and
raises AssertionError with a message that reads like

    y: ULP error 3.0 > bound 1.5 ULP (= 0.5 + … [rmsnorm, t=bf16, c=fp32, D=4096]); 2 of 8192 elements out of bound
      worst at (2, 17): golden 1.2345678, actual 1.25, |actual − golden| 0.0156 > allowed 0.0039
    reproduce: nanolm-verify check IMPL --only RMSNorm.rmsnorm_matches_golden --dtype bf16 …

Every comparison takes a :class:`properties.numerics.bounds.Bound` (allowance per element + formula), measures
ULPs with :mod:`properties.numerics.ulp` (the one implementation) and judges non-finite values by the law's own
exact answer: a NaN or ±inf output where the exact answer is finite is an error of infinite size; NaN agrees
with NaN, and an infinity with the same infinity, only where the law's exact answer is that value (golden NaN or
overflowing; ``exact_nonfinite`` / ``nan_expected`` for the invariants). Elements whose bound is +inf (an
accepted convention overflows in an intermediate) are not judged, and the run says so (a Hypothesis event).

Headroom (reported, never enforced): each comparison records ``headroom`` = max |actual − expected| / bound
(≤ 1 passes), ``pairwise headroom`` against the bound's tight pairwise reference, and the ``order class``
(``bounds.order_class``) as the run's measurements (maxima over its examples).
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from hypothesis import event, target
from hypothesis.control import currently_in_test_context

from golden.formats import fmt
from properties.library import context
from properties.numerics import ulp as _ulp
from properties.numerics.bounds import EMPIRICAL, Bound, order_class
from properties.numerics.ulp import as_f64
from properties.numerics.ulp import golden_parts as golden_f64

__all__ = [
    "EXCESS",
    "WITHOUT",
    "as_f64",
    "assert_batch_invariant",
    "assert_bitwise_equal",
    "assert_close",
    "assert_finite",
    "assert_matches_golden",
    "assert_output_contract",
    "assert_unchanged",
    "fail",
    "golden_agreement",
    "golden_f64",
    "layout",
    "plural",
    "relayout",
]


TIER = "tier"  # measurement: which tier judged the run (TIERS) — ``LawResult.tier``
TIER_OFF = "tier off"  # measurement: why the probabilistic tier did not judge inputs it would have (a declaration)
TIERS = ("probabilistic", "empirical", "deterministic")
FAILED_TIER = "failed tier"  # measurement: the tier a failure's worst element exceeded
WITHOUT = "headroom without"  # measurement: {declaration key: max error ÷ its bound had the key not been declared}
EXCESS = "excess beyond the baselines"  # measurement: max (error − measured part) ÷ unit of an empirical bound
WIDTH = 80  # columns of a failure message; only the command that reproduces it may be longer (to be copied whole)


def layout(
    headline: str,
    details: Sequence[str] = (),
    reproduce: str | None = None,
    *,
    width: int | None = WIDTH,
    lead: int = 0,
) -> str:
    """A failure message: a short headline, one indented detail per entry, the command that reproduces it last.

    Every line fits ``width`` columns — a long headline or detail wraps, its continuations indented further —
    except the command, which stays whole so that it can be copied; ``width=None``: one line per entry (the
    logical form a result record keeps, wrapped where it is printed: :func:`relayout`). A detail reads
    ``label: text`` (``out of bound``, ``bound``, ``input``, ``law``, ``found``, …); whatever else a failure should
    say (a diagnosis, the tier of a bound that failed) is one more entry. ``lead``: columns the first line shares
    with what is printed before it (an exception's type name)."""
    if width is None:
        lines = [headline, *(f"  {d}" for d in details)]
    else:
        wrap = functools.partial(textwrap.wrap, width=width, break_on_hyphens=False)
        lines = wrap(headline, initial_indent=" " * lead, subsequent_indent="    ") or [""]
        lines[0] = lines[0][lead:]
        for detail in details:
            lines += wrap(detail, initial_indent="  ", subsequent_indent="    ")
    if reproduce:
        lines.append(f"reproduce: {reproduce}")
    return "\n".join(lines)


def relayout(message: str, prefix: str = "", extra: Sequence[str] = (), *, width: int | None = WIDTH) -> str:
    """A message in the logical form of :func:`layout` (first line the headline, indented lines its details, a
    ``reproduce:`` line) laid out again: ``prefix`` before the headline (the law and dtype), ``extra`` details
    after its own."""
    first, *rest = message.splitlines() or [""]
    details = [line.strip() for line in rest if line.strip() and not line.startswith("reproduce: ")]
    reproduce = next((line.removeprefix("reproduce: ") for line in rest if line.startswith("reproduce: ")), None)
    return layout(prefix + first, [*details, *extra], reproduce, width=width)


def plural(n: int, noun: str) -> str:
    """ "1 example", "3 examples": a count and its noun, in the singular for one."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def fail(message: str, cause: str = "law", *, details: Sequence[str] = (), headroom: float | None = None) -> None:
    """Raise the failure of ``cause`` (context.LawFailure …): the message's first line is the headline, its other
    lines and ``details`` the detail; the run's input (regime) and reproduction line are added from the context.

    The exception keeps its parts (``headline``, ``details``, ``reproduce``, ``headroom``: error ÷ bound at the
    reported element, for comparisons) so that the runner can lay the message out again with what it knows."""
    __tracebackhide__ = True
    first, *rest = message.splitlines() or [""]
    parts = [line.strip() for line in rest if line.strip()] + list(details)
    ctx = context.current()
    reproduce = None
    if ctx is not None:
        parts.append(f"input: {ctx.regime()[1:-1]}")
        reproduce = ctx.repro
    exc = _FAILURES[cause](layout(first, parts, reproduce))
    exc.headline, exc.details, exc.reproduce, exc.headroom = first, parts, reproduce, headroom
    raise exc


_FAILURES = {"law": context.LawFailure, "contract": context.ContractFailure, "crash": context.SubjectCrash}


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


def assert_matches_golden(actual: torch.Tensor, golden: Any, bound: Bound, *, what: str = "y", record: bool = True):
    """|actual − golden| ≤ bound.allowed elementwise (golden: Golden hi + lo, the law's exact answer).

    A non-finite output agrees only with the same non-finite golden value (``ulp.abs_error``); an infinity also
    passes where |golden| + bound reaches the dtype's overflow threshold (a result within the bound may round to
    it). Records max and p99 ULP error (``ulp.ulp_error``), the worst element and the headroom; returns the max
    ULP error.
    """
    __tracebackhide__ = True
    dtype = actual.dtype
    gold = golden_f64(golden)
    hi, lo = gold
    a = as_f64(actual)
    if a.shape != hi.shape:
        fail(f"{what}: shape {a.shape} ≠ golden shape {hi.shape}")
    diff, err_ulp = _ulp.abs_error(a, gold, dtype), _ulp.ulp_error(a, gold, dtype)
    allowed = np.broadcast_to(np.asarray(bound.allowed, dtype=np.float64), hi.shape)
    ok = (diff <= allowed) | _reach(a, hi, lo, allowed, dtype) | _undetermined(allowed, dtype)
    return _judge(a, hi + lo, err_ulp, diff, ok, bound, dtype, what, "golden", record=record)


def assert_output_matches(actual: torch.Tensor, golden: Any, bound: Bound, *, what: str, record: bool = True):
    """An output against its golden value: bitwise the correctly rounded golden value where the bound is ½ ULP
    (one rounding: AddRMSNorm's h = x + r — a ½-ULP bound would pass either neighbour of a tie, and put the
    headroom of every exact tie at 1), else :func:`assert_matches_golden`."""
    __tracebackhide__ = True
    if bound.max_ulps <= 0.5:
        why = "the exact value correctly rounded (one rounding)"
        assert_bitwise_equal(actual, golden.rounded(actual.dtype), what=what, why=why)
        return None
    return assert_matches_golden(actual, golden, bound, what=what, record=record)


def golden_agreement(actual: Any, golden: Any, bound: Bound, dtype: torch.dtype) -> np.ndarray:
    """Elementwise, without recording or failing: does ``actual`` (values of ``dtype``) meet the golden value within
    ``bound`` as :func:`assert_matches_golden` judges it (an infinite bound: not judged, so agreeing)."""
    gold = golden_f64(golden)
    hi, lo = gold
    a = as_f64(actual)
    allowed = np.broadcast_to(np.asarray(bound.allowed, dtype=np.float64), hi.shape)
    diff = _ulp.abs_error(a, gold, dtype)
    return (diff <= allowed) | _reach(a, hi, lo, allowed, dtype) | np.isinf(allowed)


def _reach(a: np.ndarray, hi: np.ndarray, lo: np.ndarray, allowed: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """An infinity of the golden value's sign where |golden| + bound reaches the overflow threshold."""
    with np.errstate(invalid="ignore"):
        return (np.abs(hi + lo) + allowed >= fmt(dtype).overflow_threshold) & np.isinf(a) & (np.sign(a) == np.sign(hi))


def assert_close(
    actual: Any,
    expected: Any,
    bound: Bound,
    *,
    what: str,
    expected_name: str = "expected",
    exact_nonfinite: np.ndarray | bool = False,
) -> float:
    """|actual − expected| ≤ bound.abs elementwise: an invariant with a derived rounding bound.

    ``expected`` is another output of the implementation or an exact quantity; the law's exact answer is finite
    except where ``exact_nonfinite`` says otherwise — there actual must be the same NaN / infinity as expected;
    everywhere else a non-finite value on either side is an infinite error. With ``bound.dtype`` the error is also
    expressed in ULPs of that dtype (and returned); without, the quantity is a derived one (a norm, a row sum)
    and the message gives absolute errors only.
    """
    __tracebackhide__ = True
    a, e = as_f64(actual), as_f64(expected)
    if a.shape != e.shape:
        fail(f"{what}: shape {a.shape} ≠ {expected_name} shape {e.shape}")
    allowed = np.broadcast_to(np.asarray(bound.allowed, dtype=np.float64), e.shape)
    special = np.broadcast_to(np.asarray(exact_nonfinite, dtype=bool), e.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(a) & np.isfinite(e)
        same = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
        diff = np.where(finite, np.abs(a - e), np.where(special & same, 0.0, np.inf))
    dtype = bound.dtype or torch.float64
    ok = (diff <= allowed) | _undetermined(allowed, dtype)
    with np.errstate(all="ignore"):
        err_ulp = np.where(np.isfinite(diff) & (diff > 0), diff / _ulp.ulp(e, dtype), diff)
    in_ulps = bound.dtype is not None
    return _judge(a, e, err_ulp, diff, ok, bound, dtype, what, expected_name, record=False, in_ulps=in_ulps)


def _undetermined(allowed: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """Elements whose bound is infinite: an intermediate of the computation may overflow ``dtype`` (e.g. the hidden
    units of an fp16 SwiGLU), so no value — inf and NaN included — is wrong there. They are not judged, and said so."""
    undetermined = np.isinf(allowed)
    if undetermined.any() and currently_in_test_context():
        event(f"not judged: an intermediate may overflow {fmt(dtype).name} (infinite bound)")
    return undetermined


def _record_headroom(diff: np.ndarray, bound: Bound, judged: np.ndarray) -> None:
    """Record headroom = max diff/abs and the pairwise headroom (maxima over the run) and the order class."""
    ctx = context.current()
    if ctx is None or not judged.any():
        return
    with np.errstate(all="ignore"):
        d = diff[judged]
        allowed = np.broadcast_to(bound.allowed, diff.shape)[judged]
        ratio = np.where(d > 0, d / allowed, 0.0)
        at = int(np.argmax(ratio))
        room = float(ratio[at])
        pair = None
        if bound.pairwise is not None:
            pw = np.broadcast_to(bound.pairwise, diff.shape)[judged]
            pair = float(np.max(np.where(d > 0, d / pw, 0.0)))
    ulps = np.broadcast_to(bound.ulps, diff.shape)[judged][at] if bound.ulps is not None else None
    context.record_headroom(room, abs=float(allowed[at]), ulps=ulps, formula=bound.formula)
    seen = ctx.recorder.measurements
    judge = bound.judge  # the run's tier: the sharpest that judged any of its comparisons (TIERS, first wins)
    if TIER not in seen or TIERS.index(judge) < TIERS.index(seen[TIER]):
        context.measure(TIER, judge)
    if bound.tier_off:
        context.measure(TIER_OFF, bound.tier_off)
    if bound.alternatives:  # the headroom this comparison would have had without each declaration (reported only)
        without = dict(seen.get(WITHOUT) or {})
        with np.errstate(all="ignore"):
            for name, alt in bound.alternatives.items():
                other = np.broadcast_to(alt, diff.shape)[judged]
                ratio = float(np.max(np.where(d > 0, d / other, 0.0)))
                without[name] = max(ratio, float(without.get(name, 0.0)))
        context.measure(WITHOUT, without)
    if bound.empirical is not None:  # how much of the unmeasured allowance a correct implementation needs (reported)
        measured, unit = bound.empirical
        excess = (float(d.max()) - measured) / unit if unit > 0 else float("nan")
        if not math.isnan(excess):
            context.measure(EXCESS, max(excess, float(seen.get(EXCESS, -math.inf))))
    room = max(room, float(seen.get("headroom", 0.0)))
    context.measure("headroom", room)
    if pair is not None:
        pair = max(pair, float(seen.get("pairwise headroom", 0.0)))
        context.measure("pairwise headroom", pair)
    context.measure("order class", order_class(room, pair))


def _judge(
    a: np.ndarray,
    g: np.ndarray,
    err_ulp: np.ndarray,
    diff: np.ndarray,
    ok: np.ndarray,
    bound: Bound,
    dtype: torch.dtype,
    what: str,
    golden_name: str,
    record: bool = True,
    in_ulps: bool = True,
) -> float:
    __tracebackhide__ = True
    allowed = np.broadcast_to(np.asarray(bound.allowed, dtype=np.float64), diff.shape)
    judged = np.isfinite(allowed)  # infinite bound: not determined in this dtype (_undetermined)
    finite = err_ulp[judged] if err_ulp.size else err_ulp
    max_ulp = float(finite.max()) if finite.size else 0.0
    with np.errstate(invalid="ignore"):
        p99 = float(np.percentile(np.minimum(finite, 1e300), 99)) if finite.size else 0.0
    _record_headroom(diff, bound, judged)
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
    spacing = _ulp.ulp(g.flat[i : i + 1], dtype)[0]
    bound_ulp = allowed.flat[i] / spacing if spacing and np.isfinite(spacing) else float("nan")
    room = float(excess.flat[i])
    context.record_mismatch(what, a, _index(i, a.shape))  # for the diagnosis of the failure
    if not np.isfinite(diff.flat[i]):
        head = f"{what}: a non-finite value where the law's exact answer is finite (an error of infinite size)"
    elif in_ulps:
        head = f"{what}: ULP error {err_ulp.flat[i]:.4g} > bound {bound_ulp:.4g} ULP (headroom {room:.3g})"
    else:
        head = f"{what}: |actual − {golden_name}| {diff.flat[i]:.4g} > allowed {allowed.flat[i]:.4g}"
        head += f" (headroom {room:.3g})"
    n = int(bad.sum())
    tier = bound.tier(float(diff.flat[i]), i) if bound.prob is not None else "deterministic"
    context.measure(FAILED_TIER, "empirical" if bound.component in EMPIRICAL else tier or "deterministic")
    fail(
        head,
        details=[
            f"out of bound: {n} of {plural(bad.size, 'element')}; worst at {_index(i, a.shape)}: {golden_name} "
            f"{_fmt(float(g.flat[i]))}, actual {_fmt(float(a.flat[i]))}, |actual − {golden_name}| "
            f"{diff.flat[i]:.4g} > allowed {allowed.flat[i]:.4g}",
            f"bound: {bound.formula}" + (" (the deterministic tier)" if tier == "probabilistic" else ""),
            _tier_line(bound, diff, bad, i, tier),
        ],
        headroom=room,
    )
    return max_ulp


def _tier_line(bound: Bound, diff: np.ndarray, bad: np.ndarray, i: int, tier: str) -> str:
    """Which tier the worst element failed, and with what probability a correct implementation would."""
    if bound.component in EMPIRICAL:
        return ("tier: empirical (twice the largest error of the reference computed in the accepted conventions, "
                "plus roundings no baseline makes: measured on correct implementations, not derived)")  # fmt: skip
    if tier != "probabilistic":
        return "tier: deterministic (every input, order and accepted convention: never exceeded by a correct one)"
    det = float(np.broadcast_to(bound.abs, diff.shape).flat[i])
    beyond = int(np.sum(bad & (diff > np.broadcast_to(bound.abs, diff.shape))))
    return f"tier: {bound.prob_note}; within the deterministic bound {det:.4g} ({beyond} of {diff.size} beyond it)"


def assert_bitwise_equal(
    actual: torch.Tensor,
    expected: Any,
    *,
    what: str,
    why: str = "",
    zeros_signed: bool = False,
    nan_expected: np.ndarray | bool = False,
) -> None:
    """actual == expected value for value, same shape (+0 == −0 unless ``zeros_signed``).

    NaN equals NaN only where the law's exact answer is NaN (``nan_expected``); elsewhere a NaN on either side is
    a difference — two NaN outputs never agree on a finite exact answer.
    """
    __tracebackhide__ = True
    if tuple(actual.shape) != tuple(expected.shape):
        fail(f"{what}: shape {tuple(actual.shape)} ≠ {tuple(expected.shape)}")
    a, e = as_f64(actual), as_f64(expected)
    nan_ok = np.broadcast_to(np.asarray(nan_expected, dtype=bool), e.shape)
    eq = (a == e) | (nan_ok & np.isnan(a) & np.isnan(e))
    if zeros_signed:  # the sign of a zero only (a NaN's sign bit is unspecified by IEEE 754)
        eq &= (e != 0) | (np.signbit(a) == np.signbit(e))
    if bool(np.all(eq)):
        return
    i = int(np.argmin(eq.reshape(-1)))
    n = int((~eq).sum())
    dtype = actual.dtype if isinstance(actual, torch.Tensor) else torch.float64
    apart = _ulps_apart(a, e, dtype)
    context.record_mismatch(what, a, _index(i, a.shape))
    fail(
        f"{what}: not bitwise equal{' (' + why + ')' if why else ''}: {n} of {plural(eq.size, 'element')} "
        + ("differs" if n == 1 else "differ"),
        details=[
            f"first at {_index(i, a.shape)}: expected {float(e.flat[i])!r}, actual {float(a.flat[i])!r} "
            f"({_apart_text(apart.flat[i], dtype)}); largest distance {_apart_text(float(np.max(apart)), dtype)}"
        ],
    )


def _ulps_apart(a: np.ndarray, e: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """|a − e| in ULPs of ``dtype`` at e (0 where equal; inf where either is NaN or only one is infinite)."""
    with np.errstate(invalid="ignore", over="ignore"):
        same = (a == e) | (np.isnan(a) & np.isnan(e))
        gap = np.where(np.isfinite(a) & np.isfinite(e), np.abs(a - e) / _ulp.ulp(e, dtype), np.inf)
    return np.where(same, 0.0, gap)


def _apart_text(n: float, dtype: torch.dtype) -> str:
    if not np.isfinite(n):
        return "not comparable: a NaN or an infinity on one side"
    name = fmt(dtype).name
    return f"{n:.4g} ULP of {name} apart" if n != 1 else f"1 ULP of {name} apart"


def assert_batch_invariant(part: torch.Tensor, whole: torch.Tensor, bound: Bound, *, what: str) -> None:
    """f(x[:k]) == f(x)[:k] bitwise where the component's declaration, or undeclared the contract, requires it
    (``Conventions.batch_invariance``: RMSNorm on the CPU; ``batch_invariant: True``); elsewhere the two results
    need only agree as two results of one implementation do (``bound``: ``bounds.between`` of the rows' bound —
    a NaN never agrees) and their bitwise equality is measured. Either way the run records ``batch_invariant`` (no
    example so far differed) and ``batch variance`` (examples, those that differed, the largest distance in ULPs
    of the output dtype), which reports and ``compare`` read."""
    __tracebackhide__ = True
    a, e = as_f64(part), as_f64(whole)
    same = a.shape == e.shape and bool(np.all((a == e) | (np.isnan(a) & np.isnan(e))))
    apart = 0.0 if same or a.shape != e.shape else float(np.max(_ulps_apart(a, e, part.dtype)))
    ctx = context.current()
    if ctx is not None:
        seen = ctx.recorder.measurements.get("batch variance") or {"examples": 0, "differing": 0, "max_ulp": 0.0}
        seen = {
            "examples": seen["examples"] + 1,
            "differing": seen["differing"] + (not same),
            "max_ulp": max(float(seen["max_ulp"]), apart),
        }
        context.measure("batch variance", seen)
        context.measure("batch_invariant", seen["differing"] == 0)
    if ctx is None or ctx.conventions is None or ctx.conventions.batch_invariance(ctx.dtype, ctx.device):
        assert_bitwise_equal(part, whole, what=what, why="batch invariance")
        return
    if not same and currently_in_test_context():
        event("batch-variant (measured: not required by the declaration or the contract)")
        target(min(apart, 1e30), label="ULP distance between batch sizes")
    assert_close(part, whole, bound, what=what, expected_name="the rows of the whole batch")


def assert_unchanged(before: torch.Tensor, after: torch.Tensor, *, what: str) -> None:
    """A tensor the implementation received is bitwise what it was before the call.

    (A parameter the implementation keeps in another dtype — fp32 master weights — is compared by value.)
    """
    __tracebackhide__ = True
    after = after.detach().to(before.device)
    nan_before = np.isnan(as_f64(before))  # a NaN the caller passed in must still be there
    if before.dtype != after.dtype:
        assert_bitwise_equal(
            after, before, what=f"{what} was modified by the call", zeros_signed=True, nan_expected=nan_before
        )
        return
    same = before.shape == after.shape and bool(
        torch.equal(before.view(fmt(before.dtype).int_view), after.view(fmt(after.dtype).int_view))
    )
    if not same:
        assert_bitwise_equal(
            after, before, what=f"{what} was modified by the call", zeros_signed=True, nan_expected=nan_before
        )
        fail(f"{what} was modified by the call (bit patterns differ)")


def assert_finite(
    y: torch.Tensor, *, what: str, mask: np.ndarray | None = None, without: np.ndarray | None = None, cause: str = ""
) -> None:
    """Every (selected) element of y is finite. ``without``: the same call without ``cause`` (a poisoned element):
    where an element is non-finite there too, the message says the element fails on its own, not through it."""
    __tracebackhide__ = True
    a = as_f64(y)
    bad = ~np.isfinite(a) if mask is None else (~np.isfinite(a) & mask)
    if bool(bad.any()):
        i = int(np.argmax(bad.reshape(-1)))
        head = f"{what}: {plural(int(bad.sum()), 'non-finite element')}, first at {_index(i, a.shape)}: {a.flat[i]}"
        if without is not None:
            own = bad & ~np.isfinite(np.asarray(without, dtype=np.float64))
            if own.reshape(-1)[i]:
                head += (f" — non-finite without {cause} too ({int(own.sum())} of the {int(bad.sum())}): the "
                         "implementation fails those elements on their own, not through the poison")  # fmt: skip
            elif own.any():
                head += f" — {int(own.sum())} of them non-finite without {cause} too"
        fail(head)
