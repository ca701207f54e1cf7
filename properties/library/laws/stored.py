"""Laws on the stored golden corpus (``golden/data``): the implementation runs on stored cases — including
realistic sizes (the large RMSNorm rows, the Llama-shaped SwiGLU rows, long sequences) whose golden values were
computed once — and is judged against the stored golden values within the same derived bounds as the drawn laws.

The corpus is verified first (manifest checksums, magic, version, per-case hashes); a corpus that cannot be
verified is reported as the suite's problem (``CorpusUnavailable``, one line naming the file), never as a pass.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import golden
from golden import corpus
from golden.formats import fmt
from properties.library import strategies as S
from properties.library.assertions import assert_bitwise_equal, assert_matches_golden
from properties.library.context import NotApplicable, SuiteDataError, count_examples, current, describe
from properties.library.harness import add_rmsnorm_forward, block_forward, rmsnorm_forward, swiglu_forward
from properties.library.laws.add_rmsnorm import rounded_once
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

AXIS = "the stored golden corpus: realistic sizes, long sequences"  # its column in the matrix
DType = torch.dtype


@functools.cache
def _cases(family: str) -> tuple[corpus.Case, ...]:
    """The verified stored cases of a family (verified once per process)."""
    try:
        return tuple(corpus.cases(family))
    except corpus.CorpusError as exc:
        raise SuiteDataError(f"stored golden corpus unusable: {exc}") from None


# A stored case's cost is its number of input values: the Llama-shaped SwiGLU rows (≥ 8.8·10⁷ weights, regenerated
# from their recipes on use) run in the slow tier (thorough); every other case — D up to 16384, F = 28672 at
# D = 256, T = 1024 — in every profile.
CHEAP = 3 * 10**7


def stored(family: str, dtype: DType) -> list[corpus.Case]:
    """The stored cases of ``family`` in ``dtype`` this profile runs (NotApplicable when there are none)."""
    ctx = current()
    slow = ctx.slow if ctx is not None else False
    chosen = [c for c in _cases(family) if c.dtype == dtype and (slow or c.cost <= CHEAP)]
    if not chosen:
        raise NotApplicable(f"the stored corpus has no {family} case in {fmt(dtype).name} for this profile")
    try:  # decoded and checked before the subject runs: a case that fails to verify is the suite's error
        for case in chosen:
            _ = case.inputs, case.golden
    except corpus.CorpusError as exc:
        raise SuiteDataError(f"stored golden corpus unusable: {exc}") from None
    return chosen


_BOUNDS: dict[tuple[str, str, str], bounds.Bound] = {}


def _bound(case: corpus.Case, dtype: DType, derive: Callable[..., bounds.Bound], *args: Any, **kw: Any) -> bounds.Bound:
    """``derive(*args, **kw)``: the bound of a stored case, a function of its stored inputs, the dtype and the
    declared arithmetic only — derived once per process and shared by every implementation judged on the case
    (``compare`` and the test suite judge many; a large case's bound takes seconds). Its arrays are made read-only:
    a shared bound stays as derived."""
    key = (case.id, fmt(dtype).name, repr(bounds.declared_arithmetic()))
    if key not in _BOUNDS:
        bound = derive(*args, **kw)
        for array in (bound.abs, bound.ulps, bound.overflow, bound.pairwise, bound.prob):
            if isinstance(array, np.ndarray):
                array.setflags(write=False)
        _BOUNDS[key] = bound
    return _BOUNDS[key]


def _note(case: corpus.Case) -> None:
    describe(case=case.id, shape=tuple(case.golden.shape))
    count_examples(1)


@law("RMSNorm")
def rmsnorm_matches_stored_golden(impl: Implementation, dtype: DType, device: str) -> None:
    """On every stored RMSNorm case (D up to the largest stored row), |y − golden| ≤ bounds.rmsnorm elementwise."""
    for case in stored("rmsnorm", dtype):
        _note(case)
        x, w, eps = case.tensor("x"), case.tensor("weight"), case.params["eps"]
        y = rmsnorm_forward(impl, x, w, eps, dtype, device)
        bound = _bound(case, dtype, bounds.rmsnorm, x, w, eps, dtype, drawn=True)  # (model_rows: not the structured)
        assert_matches_golden(y, case.golden, bound, what=f"y [{case.id}]")


@law("SwiGLU")
def swiglu_matches_stored_golden(impl: Implementation, dtype: DType, device: str) -> None:
    """On every stored SwiGLU case (Llama-shaped rows included), |y − golden| ≤ bounds.swiglu elementwise."""
    for case in stored("swiglu", dtype):
        _note(case)
        x, (wg, wu, wd) = case.tensor("x"), (case.tensor(n) for n in ("w_gate", "w_up", "w_down"))
        y = swiglu_forward(impl, x, {"w_gate.weight": wg, "w_up.weight": wu, "w_down.weight": wd}, dtype, device)
        bound = _bound(case, dtype, bounds.swiglu, x, wg, wu, wd, dtype, random_weights=True)
        assert_matches_golden(y, case.golden, bound, what=f"y [{case.id}]")


@law("Block")
def block_matches_stored_golden(impl: Implementation, dtype: DType, device: str) -> None:
    """On every stored Block case (T up to 4096: long sequences judged at a sample of their positions), |out − golden|
    ≤ bounds.block elementwise."""
    for case in stored("block", dtype):
        _note(case)
        x, config = case.tensor("x"), case.config
        params = {k: case.tensor(k) for k in golden.BLOCK_PARAMS}
        y = block_forward(impl, x, config, params, dtype, device)
        J = S.long_positions(x.shape[1])  # a long sequence: judged at a sample of positions (every key counts)
        bound = _bound(case, dtype, bounds.block, x, params, config, dtype, random_weights=True, drawn=True, tokens=J)
        gold = golden.Golden(case.golden.hi[:, J], case.golden.lo[:, J])
        assert_matches_golden(y[:, J], gold, bound, what=f"out [{case.id}]")


# ------------------------------------------------------------------------------------------ AddRMSNorm
@law("AddRMSNorm")
def add_rmsnorm_matches_stored_golden(impl: Implementation, dtype: DType, device: str) -> None:
    """On every stored AddRMSNorm case (D = 8192), |y − golden| ≤ bounds.add_rmsnorm and h = x + r rounded once."""
    for case in stored("add_rmsnorm", dtype):
        _note(case)
        x, r, w, eps = case.tensor("x"), case.tensor("residual"), case.tensor("weight"), case.params["eps"]
        y, h = add_rmsnorm_forward(impl, x, r, w, eps, dtype, device)
        assert_bitwise_equal(h, rounded_once(x, r), what=f"h [{case.id}]", why="x + r rounded once")
        b = bounds.add_rmsnorm(x, r, w, eps, dtype, drawn=True)[0]  # (model_rows: not the structured)
        assert_matches_golden(y, case.golden, b, what=f"y [{case.id}]")
