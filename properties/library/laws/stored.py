"""Laws on the stored golden corpus (``golden/data``): the implementation runs on stored cases — including
realistic sizes (the large RMSNorm rows, the Llama-shaped SwiGLU rows, long sequences) whose golden values were
computed once — and is judged against the stored golden values within the same derived bounds as the drawn laws.

One generic family (``families``), one law per component record with stored cases (``record.corpus``: its family
of the corpus; ``record.stored``: a stored case → its inputs, parameters and options): ``<component>_matches_stored_
golden``. The corpus
stores the golden value of the first output; the other outputs (AddRMSNorm's h = x + r, one rounding) are judged
against the record's golden value and bound. A causal component's long sequences are judged at a sample of their
positions (``strategies.long_positions``: every key still counts).

The corpus is verified first (manifest checksums, magic, version, per-case hashes); a corpus that cannot be
verified is reported as the suite's problem (``CorpusUnavailable``, one line naming the file), never as a pass.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch

import golden
from golden import corpus
from golden.formats import fmt
from properties.library import components
from properties.library import strategies as S
from properties.library.assertions import assert_matches_golden, assert_output_matches
from properties.library.context import NotApplicable, SuiteDataError, count_examples, current, describe
from properties.library.families import family, named
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


_BOUNDS: dict[tuple[str, str, str], tuple[bounds.Bound, ...]] = {}


def _bounds(
    case: corpus.Case, dtype: DType, derive: Callable[[], tuple[bounds.Bound, ...]]
) -> tuple[bounds.Bound, ...]:
    """``derive()``: the bounds (one per output) of a stored case, a function of its stored inputs, the dtype and
    the declared arithmetic only — derived once per process and shared by every implementation judged on the case
    (``compare`` and the test suite judge many; a large case's bound takes seconds). Their arrays are made
    read-only: a shared bound stays as derived."""
    key = (case.id, fmt(dtype).name, repr(bounds.declared_arithmetic()))
    if key not in _BOUNDS:
        derived = tuple(derive())
        for bound in derived:
            for array in (bound.abs, bound.ulps, bound.overflow, bound.pairwise, bound.prob):
                if isinstance(array, np.ndarray):
                    array.setflags(write=False)
        _BOUNDS[key] = derived
    return _BOUNDS[key]


def _note(case: corpus.Case) -> None:
    describe(case=case.id, shape=tuple(case.golden.shape))
    count_examples(1)


def _judge_stored(rec: components.Component, impl: Implementation, sc: corpus.Case, dtype: DType, device: str):
    """The first output within its bound of the stored golden value (a causal component's at a sample of
    positions); every other output within its bound of the record's golden value."""
    __tracebackhide__ = True
    inputs, params, options = rec.stored(sc)
    case = rec.case(inputs, params, **options)
    outs = rec.forward(impl, case, dtype, device)
    # (model_rows: not the structured tier; a long sequence: judged at a sample of positions, every key counts)
    J = S.long_positions(case.inputs[0].shape[1]) if rec.causal else slice(None)
    opts = {"tokens": J} if rec.causal else {}
    bnds = _bounds(sc, dtype, lambda: rec.bounds(case, dtype, random_weights=True, drawn=True, **opts))
    gold = golden.Golden(sc.golden.hi[:, J], sc.golden.lo[:, J]) if rec.causal else sc.golden
    assert_matches_golden(outs[0][:, J], gold, bnds[0], what=f"{rec.outputs[0]} [{sc.id}]")
    if len(rec.outputs) > 1:  # not stored: the record's golden value
        golds = rec.golden(case)
        for name, out, g, b in zip(rec.outputs[1:], outs[1:], golds[1:], bnds[1:], strict=True):
            assert_output_matches(out, g, b, what=f"{name} [{sc.id}]", record=False)


def _statement(rec: components.Component) -> str:
    first, rest = rec.outputs[0], rec.outputs[1:]
    where = " (long sequences judged at a sample of their positions)" if rec.causal else ""
    others = f"; {', '.join(rest)} within the record's bound of golden" if rest else ""
    return (
        f"On every stored {rec.name} case{where}, |{first} − stored golden| ≤ the record's derived bound "
        f"elementwise{others}."
    )


@family(
    "stored",
    axis=AXIS,
    reason=lambda rec: None if rec.corpus and rec.stored else "no stored golden cases (its record's ``corpus``)",
)
def _stored(rec: components.Component) -> tuple[str, ...]:
    def matches_stored_golden(impl: Implementation, dtype: DType, device: str) -> None:
        for sc in stored(rec.corpus, dtype):
            _note(sc)
            _judge_stored(rec, impl, sc, dtype, device)

    fn = named(matches_stored_golden, f"{rec.snake}_matches_stored_golden", _statement(rec))
    law(rec.name)(fn)
    return (f"{rec.name}.{fn.__name__}",)
