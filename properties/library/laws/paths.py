"""Laws at the sizes where kernels switch code path: row counts past a launch grid's 65,535 programs (and past
65,535 programs of k rows), many narrow rows (several rows per program), widths one past a power of two (a
one-element tail block) or not a power of two, batch × heads past 65,535 attention programs, head dims and FFN
widths of 2^k + 1 or 2^k + 2.

The drawn cases never reach these sizes: a few rows, D ≤ 769. Each law enumerates the cases of
``strategies.PATHS`` for its component, runs the implementation on every row — forward, and the backward for a
random cotangent where the input gradient is per row — and judges a sample of the rows (``strategies.
sampled_rows``: the first and the last, both sides of every power-of-two boundary, random ones) against golden
within the component's derived bound (with its probabilistic tier: the rows and weights are the verifier's seeded
random draws). The oracle is per row: golden and the bound are evaluated on the sampled rows only, so 131,075
rows cost what a drawn case costs. (A weight gradient sums over every row: its row blocks are judged by the
gradient laws' pinned many-row cases.)

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
import time
from collections.abc import Iterator

import numpy as np
import torch

import golden
from properties.library import strategies as S
from properties.library.assertions import assert_bitwise_equal, assert_matches_golden
from properties.library.context import count_examples, current, describe, measure
from properties.library.harness import (
    backward,
    block_forward,
    build_add_rmsnorm,
    build_rmsnorm,
    build_swiglu,
    call,
    call_pair,
)
from properties.library.laws.add_rmsnorm import rounded_once
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

AXIS = "code-path sizes: row counts and widths where kernels switch path"  # its column in the matrix
DType = torch.dtype
NAMES = ("w_gate.weight", "w_up.weight", "w_down.weight")


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


def _cases(component: str, dtype: DType) -> Iterator[S.PathCase]:
    """The component's cases in ascending row count, each timed; one estimated over the profile's case budget is
    left (``sizes left``), the others judged (``case seconds``)."""
    ctx, costs, seconds, left = current(), Costs(), {}, []
    budget = ctx.case_budget if ctx is not None else None
    for case in sorted((build(dtype) for build in S.PATHS[component].values()), key=_n_rows):
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


def _rows(t: torch.Tensor, idx: np.ndarray) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1])[torch.from_numpy(idx)]


def _forward_and_dx(module: torch.nn.Module, x: torch.Tensor, g: torch.Tensor, component: str, device: str):
    """y = module(x) (no_grad: the inference path) and dx for cotangent g (a recording call and its backward)."""
    y = call(module, x.to(device), component=component)
    xd = x.to(device).requires_grad_(True)
    (dx,) = backward(call(module, xd, component=component, grad=True), g.to(device), [xd], component=component)
    return y, dx


def _add_rmsnorm_run(impl: Implementation, c: S.PathCase, dtype: DType, device: str):
    """((y, h) of the inference path, (dx, dr) for random cotangents, those cotangents (g_y, g_h))."""
    w, r = c.params["weight"], c.params["residual"]
    module = build_add_rmsnorm(impl, w, c.eps, dtype, device)
    outs = call_pair(module, c.x.to(device), r.to(device))
    xd, rd = (t.to(device).requires_grad_(True) for t in (c.x, r))
    gs = tuple(S.cotangent(tuple(c.x.shape), dtype, c.x.shape[0] + k) for k in range(2))
    yd, hd = call_pair(module, xd, rd, grad=True)
    grads = backward((yd, hd), tuple(g.to(device) for g in gs), [xd, rd], component="AddRMSNorm")
    return outs, grads, gs


def _sample(c: S.PathCase, *tensors: torch.Tensor, unit: str = "rows") -> tuple[np.ndarray, list, str]:
    """The sampled rows of the case (``strategies.sampled_rows``), those rows of each tensor, and their name."""
    idx = S.sampled_rows(c.x.numel() // c.x.shape[-1], c.x.shape[-1])
    return idx, [_rows(t, idx) for t in tensors], f"[{c.name}] {unit} {idx.tolist()}"


def _judge(idx: np.ndarray, what: str, *checks: tuple) -> None:
    """Each (name, full output, golden of the sampled rows, bound) judged on the sampled rows; the first (the
    output) records the law's ULP measurements, derivatives do not (ULPs of cancelling sums say little)."""
    __tracebackhide__ = True
    for k, (name, full, gold, bound) in enumerate(checks):
        assert_matches_golden(_rows(full, idx), gold, bound, what=f"{name} {what}", record=k == 0)


@law("RMSNorm", cost=4)
def rmsnorm_matches_golden_at_code_path_sizes(impl: Implementation, dtype: DType, device: str) -> None:
    """On 2^16 + 1 rows (D = 8), 2^17 + 3 rows (D = 4), 4,099 rows of D = 64 and 256, and a few rows of D = 513,
    4097 (2^k + 1), 1536 and 2047, y and dx (random cotangent) match golden within bounds.rmsnorm(_vjp) on the
    first, last, every power-of-two-boundary and random rows."""
    for c in _cases("RMSNorm", dtype):
        w, g = c.params["weight"], S.cotangent(tuple(c.x.shape), dtype, c.x.shape[0])
        y, dx = _forward_and_dx(build_rmsnorm(impl, w, c.eps, dtype, device), c.x, g, "RMSNorm", device)
        idx, (xs, gs), what = _sample(c, c.x, g)
        gdx, bdx = golden.rmsnorm_vjp(xs, w, c.eps, gs)[0], bounds.rmsnorm_vjp(xs, w, c.eps, gs, dtype, drawn=True)[0]
        y_check = ("y", y, golden.rmsnorm(xs, w, c.eps), bounds.rmsnorm(xs, w, c.eps, dtype, drawn=True))
        _judge(idx, what, y_check, ("dx", dx, gdx, bdx))


@law("SwiGLU", cost=4)
def swiglu_matches_golden_at_code_path_sizes(impl: Implementation, dtype: DType, device: str) -> None:
    """On 2^16 + 1 tokens (D = F = 4), 2^17 + 3 tokens (D = 2, F = 4), 4,099 tokens (D = 32, F = 86) and tokens of
    D = 129, F = 257 (2^k + 1), y and dx (random cotangent) match golden within bounds.swiglu(_vjp) on the first,
    last, every power-of-two-boundary and random tokens."""
    for c in _cases("SwiGLU", dtype):
        w, g = [c.params[n] for n in NAMES], S.cotangent(tuple(c.x.shape), dtype, c.x.shape[0])
        y, dx = _forward_and_dx(build_swiglu(impl, c.params, dtype, device), c.x, g, "SwiGLU", device)
        idx, (xs, gs), what = _sample(c, c.x, g, unit="tokens")
        y_check = ("y", y, golden.swiglu(xs, *w), bounds.swiglu(xs, *w, dtype, random_weights=True))
        gdx, bdx = golden.swiglu_vjp(xs, *w, gs)[0], bounds.swiglu_vjp(xs, *w, gs, dtype)[0]
        _judge(idx, what, y_check, ("dx", dx, gdx, bdx))


@law("Block", cost=4)
def block_matches_golden_at_code_path_sizes(impl: Implementation, dtype: DType, device: str) -> None:
    """With B = 32,769 and 2,049 sequences of T = 2 on H = 2 heads (65,538 and 4,098 attention programs), and head dim
    K = 34 = 2^5 + 2 and F = 65 = 2^6 + 1, out matches golden within bounds.block on the first, last, every
    power-of-two-boundary and random sequences."""
    for c in _cases("Block", dtype):
        y = block_forward(impl, c.x, c.config, c.params, dtype, device)
        idx = torch.from_numpy(S.sampled_rows(c.x.shape[0], c.x.shape[1]))
        xs = c.x[idx]
        b = bounds.block(xs, c.params, c.config, dtype, random_weights=True, drawn=True)
        what = f"out [{c.name}] sequences {idx.tolist()}"
        assert_matches_golden(y[idx.to(y.device)], golden.block(xs, c.params, c.config), b, what=what)


# ------------------------------------------------------------------------------------------ AddRMSNorm
@law("AddRMSNorm", cost=4)
def add_rmsnorm_matches_golden_at_code_path_sizes(impl: Implementation, dtype: DType, device: str) -> None:
    """On 2^16 + 1 rows (D = 8), 4,099 rows of D = 64 and 5 rows of D = 4097 (2^12 + 1), y matches golden within
    bounds.add_rmsnorm, h is x + r rounded once, and dx = dr (random cotangents of y and h) match
    golden.add_rmsnorm_vjp on the first, last, every power-of-two-boundary and random rows."""
    for c in _cases("AddRMSNorm", dtype):
        w, r = c.params["weight"], c.params["residual"]
        (y, h), (dx, dr), (gy, gh) = _add_rmsnorm_run(impl, c, dtype, device)
        idx, (xs, rs, gys, ghs), what = _sample(c, c.x, r, gy, gh)
        assert_bitwise_equal(_rows(h, idx), rounded_once(xs, rs), what=f"h {what}", why="x + r rounded once")
        y_check = (
            "y",
            y,
            golden.add_rmsnorm(xs, rs, w, c.eps)[0],
            bounds.add_rmsnorm(xs, rs, w, c.eps, dtype, drawn=True)[0],
        )
        gd = golden.add_rmsnorm_vjp(xs, rs, w, c.eps, gys, ghs)[0]
        bd = bounds.add_rmsnorm_vjp(xs, rs, w, c.eps, gys, ghs, dtype)[0]
        _judge(idx, what, y_check, ("dx", dx, gd, bd), ("d(residual)", dr, gd, bd))
