"""Laws at the sizes where kernels switch code path: row counts past a launch grid's 65,535 programs (and past
65,535 programs of k rows), many narrow rows (several rows per program), widths one past a power of two (a
one-element tail block) or not a power of two, batch × heads past 65,535 attention programs, head dims and FFN
widths of 2^k + 1 or 2^k + 2.

The drawn cases never reach these sizes: a few rows, D ≤ 769. One generic family (``families``), one law per
component record that enumerates its sizes (``record.paths``: ``strategies.RMSNORM_PATHS`` …):
``<component>_matches_golden_at_code_path_sizes``. Each law runs the implementation on every row of each case —
forward, and the backward for random cotangents (one per output) where the record has a golden VJP, whose input
gradients are per row — and judges a sample of the rows (``strategies.sampled_rows``: the first and the last, both
sides of every power-of-two boundary, random ones; a causal component's unit is a sequence) against golden within
the record's derived bounds, every output and every input's gradient (with the probabilistic tier: the rows and
weights are the verifier's seeded random draws). The oracle is per row: golden and the bound are evaluated on the
sampled rows only, so 131,075 rows cost what a drawn case costs. (A weight gradient sums over every row: its row
blocks are judged by the gradient laws' pinned many-row cases. The Block's gradient oracle is the fp64 reference
over whole batches, not per row: its forward is judged.)

**The profile's time per case.** What a case costs is the implementation's: milliseconds for an eager or compiled
one, minutes for Triton kernels interpreted (a program per row, each in Python). The cases run in ascending row
count, each timed here (the judge's side: the subject's calls and the judging of its sampled rows); before a case,
its cost is estimated from those that ran (:class:`Costs`: affine in rows), and a case estimated over the profile's
``case_budget`` (``ci``: 90 s; ``dev`` and ``thorough``: none) is not judged in this profile — the result's
measurement ``sizes left`` names it with its estimate, the check's footer lists it, ``--profile dev`` judges it. The
timing only decides what runs, never a verdict.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator

import numpy as np
import torch

from properties.library import components
from properties.library import strategies as S
from properties.library.assertions import assert_matches_golden, assert_output_matches, fail
from properties.library.context import count_examples, current, describe, measure
from properties.library.families import family, named
from properties.library.harness import backward
from properties.library.subject import Implementation
from properties.library.table import law

AXIS = "code-path sizes: row counts and widths where kernels switch path"  # its column in the matrix
DType = torch.dtype


RAMP = 64  # a case is estimated from cases that ran only when the largest of them has ≥ 1/RAMP of its rows


@dataclasses.dataclass
class Costs:
    """The seconds each case that ran took, by row count: the estimate of the next, larger case."""

    ran: list[tuple[int, float]] = dataclasses.field(default_factory=list)  # (rows, seconds)

    def estimate(self, rows: int) -> float | None:
        """Affine in rows: the smallest case's time stands for what a case costs whatever its rows (the trip to the
        subject, a compile, golden on the sampled rows) — a proportional estimate would charge it to every row (a
        5-row case would put an eager 2^16-row one at minutes) — and each further row costs the least a case of at
        least 1/RAMP of ``rows`` paid per row: a wider row costs more (more elements; fewer rows per program of a
        kernel that packs rows), and the largest cases are the narrowest. None — no estimate: the case runs — until
        such a case has run (a slope measured over a few rows says nothing of 2^16)."""
        if not self.ran:
            return None
        n0, t0 = min(self.ran)
        large = [(n, t) for n, t in self.ran if n * RAMP >= rows]
        if not large:
            return None
        if all(n == n0 for n, _ in large):
            return min(t / n for n, t in large) * rows
        slope = min((t - t0) / (n - n0) for n, t in large if n > n0)
        return t0 + max(0.0, slope) * (rows - n0)


def _n_rows(case: S.PathCase) -> int:
    return case.x.numel() // case.x.shape[-1]


def _cases(rec: components.Component, dtype: DType) -> Iterator[S.PathCase]:
    """The component's cases in ascending row count, each timed; one estimated over the profile's case budget is
    left (``sizes left``), the others judged (``case seconds``)."""
    ctx, costs, seconds, left = current(), Costs(), {}, []
    budget = ctx.case_budget if ctx is not None else None
    for case in sorted((build(dtype) for build in rec.paths().values()), key=_n_rows):
        rows, estimate = _n_rows(case), costs.estimate(_n_rows(case))
        if budget is not None and estimate is not None and estimate > budget:
            left.append({"case": case.name, "estimated s": round(estimate, 1), "budget s": budget})
            measure("sizes left", left)
            continue
        describe(**case.describe())
        count_examples(1)
        start = time.perf_counter()
        yield case
        costs.ran.append((rows, time.perf_counter() - start))
        seconds[case.name] = round(costs.ran[-1][1], 3)
        measure("case seconds", seconds)


def _unit(rec: components.Component) -> tuple[int, str]:
    """The trailing dimensions of one unit judged on its own and its name: a row (…, D) — a causal component's
    rows depend on the earlier rows of their sequence, so its unit is a sequence (…, T, D)."""
    return (2, "sequences") if rec.causal else (1, "rows")


def _units(t: torch.Tensor, k: int, idx: np.ndarray) -> torch.Tensor:
    """The units ``idx`` of t (its trailing ``k`` dimensions make one)."""
    return t.reshape(-1, *t.shape[-k:])[torch.from_numpy(idx).to(t.device)]


def _gradient_name(name: str) -> str:
    return f"d{name}" if len(name) == 1 else f"d({name})"


def _judge_size(rec: components.Component, impl: Implementation, c: S.PathCase, dtype: DType, device: str) -> None:
    """Every output (and, where the record has a golden VJP, every input's gradient for random cotangents, one per
    output) on the sampled units within the record's bounds of golden; the first output records the law's ULP
    measurements, the others and the derivatives do not (ULPs of cancelling sums say little)."""
    __tracebackhide__ = True
    k, unit = _unit(rec)
    x = c.x
    idx = S.sampled_rows(x.numel() // math.prod(x.shape[-k:]), x.shape[-k])
    what = f"[{c.name}] {unit} {idx.tolist()}"
    case = rec.case(c.inputs, c.params, **c.options)
    module = rec.build(impl, case, dtype, device)
    outs = rec.call(module, tuple(t.to(device) for t in case.inputs))  # no_grad: the inference path
    sampled = case.with_inputs(tuple(_units(t, k, idx) for t in case.inputs))
    golds, bnds = rec.golden(sampled), rec.bounds(sampled, dtype, random_weights=True, drawn=True)
    for n, (name, out, gold, b) in enumerate(zip(rec.outputs, outs, golds, bnds, strict=True)):
        assert_output_matches(_units(out, k, idx), gold, b, what=f"{name} {what}", record=n == 0)
    if rec.golden_vjp_of is None:
        return
    leaves = [t.to(device).requires_grad_(True) for t in case.inputs]
    gs = tuple(S.cotangent(tuple(x.shape), dtype, x.shape[0] + n) for n in range(len(rec.outputs)))
    ys = rec.call(module, tuple(leaves), grad=True, check=False)  # a recording call and its backward
    grads = backward(ys, tuple(g.to(device) for g in gs), leaves, component=rec.name)
    expected = rec.vjp(sampled, tuple(_units(g, k, idx) for g in gs), dtype, drawn=True)
    for name, grad in zip(rec.inputs, grads, strict=True):
        if grad is None:  # the input does not reach the outputs (a cut graph): no gradient to judge is a wrong one
            fail(f"{rec.name} backward gives no gradient for {name} [{c.name}]")
        gold, b = expected[name]
        assert_matches_golden(_units(grad, k, idx), gold, b, what=f"{_gradient_name(name)} {what}", record=False)


def _statement(rec: components.Component) -> str:
    unit = _unit(rec)[1]
    sizes = "; ".join(rec.paths())
    judged = list(rec.outputs)
    if rec.golden_vjp_of is not None:
        judged += [f"{_gradient_name(n)} (random cotangents)" for n in rec.inputs]
    judged_text = ", ".join(judged[:-1]) + " and " + judged[-1] if len(judged) > 1 else judged[0]
    return (
        f"On each code-path size ({sizes}), {judged_text} match golden within the record's bounds on the first, last, "
        f"every power-of-two-boundary and random {unit}."
    )


@family(
    "paths",
    axis=AXIS,
    reason=lambda rec: None if rec.paths is not None else "no code-path sizes enumerated (its record's ``paths``)",
)
def _paths(rec: components.Component) -> tuple[str, ...]:
    def matches_golden_at_code_path_sizes(impl: Implementation, dtype: DType, device: str) -> None:
        for c in _cases(rec, dtype):
            _judge_size(rec, impl, c, dtype, device)

    fn = named(matches_golden_at_code_path_sizes, f"{rec.snake}_matches_golden_at_code_path_sizes", _statement(rec))
    law(rec.name, cost=4)(fn)
    return (f"{rec.name}.{fn.__name__}",)
