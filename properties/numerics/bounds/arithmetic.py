"""The arithmetic a bound is evaluated in: unit roundoffs and γ_k of reductions in any order, the declared
arithmetic (:class:`Arithmetic`, :func:`declared`, :func:`shadowed`), the compute dtype's one policy
(:func:`compute_dtype`) and the precisions of one evaluation (``_P``).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import math
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from golden.formats import fmt
from nanolm_core._checks import upcast_dtype
from properties.numerics.bounds.bound import Bound

U64 = 2.0**-53  # the verifier's own float64 arithmetic (exact invariant values computed in fp64)
ORDERS = ("any", "pairwise")


def gamma(k: float, u: float) -> float:
    """γ_k = k·u / (1 − k·u): the bound on the relative error of k accumulated roundings (Higham §3.1)."""
    return k * u / (1 - k * u) if k * u < 1 else math.inf


def reduction_roundings(n: int, order: str, per_term: int = 0) -> int:
    """Roundings on the longest path of an n-term sum: n − 1 (any order: the sequential tree is the deepest) or
    ⌈log2 n⌉ (pairwise), plus ``per_term`` roundings of each term before it is added (1 for a product)."""
    n = max(int(n), 1)
    depth = n - 1 if order == "any" else math.ceil(math.log2(n))
    return depth + per_term


# ------------------------------------------------------------------------------ declared arithmetic
@dataclasses.dataclass(frozen=True)
class Arithmetic:
    """How an implementation *declares* it computes, in the terms of the bounds (empty: the contract's accepted
    conventions, and every bound is exactly the undeclared one). Made from a declaration by
    ``properties.library.conventions.Conventions.arithmetic``; set for a law run by :func:`declared`.

    ``compute``       {storage dtype: compute dtype}: c for those storage dtypes (else :func:`compute_dtype`'s
                      default). A c that cannot hold every value of t (fp32 for fp64 storage) is *demoted*: inputs
                      and weights entering c are rounded to it (u_c, half a subnormal spacing of c, overflow of c:
                      not judged), every operation may run in c (u_c) and residual sums too; a result of c is
                      exact in t, so the roundings "to t" of the accepted conventions cost nothing there.
    ``accumulation``  {storage: dtype}: every sum and dot product accumulates with that unit roundoff (the
                      products and scalings before the sum keep u_c).
    ``eps``           {storage: dtype}: eps is rounded to that dtype before it is added: r = (ms + eps')^-1/2
                      differs from (ms + eps)^-1/2 by exactly |1 − √(v/v')|, v' = ms + eps' (added to r's error).
    ``weight_offset`` o ≠ 0: the gain is formed as o + (γ − o): γ − o stored (≤ u_t), converted to c (≤ u_c),
                      o added in c (≤ u_c): |γ_eff − γ| ≤ (u_t + u_c + u_t·u_c)·|γ − o| + u_c·|γ_eff|.
    ``flush``         {storage dtype: {"input", "output"}} (or one set for every dtype): subnormal values of t among
                      the inputs and weights may be read as 0
                      (error |v|, propagated without linearising the norm's r); an output whose magnitude is below
                      t's smallest normal may be returned as 0 (+ that normal). Flushed results of operations in c
                      ("intermediate") are inside every bound already (tiny_c per operation).
    ``norm_input``    AddRMSNorm: its norm reads "rounded" h (fl_t(x + r)) or the "sum" in c (:func:`add_rmsnorm`).

    A demoted implementation may also mix precisions (HF: the norm in fp32, the projections in fp64): an operation
    in t whose result is then converted to c errs by u_t + u_c·(1 + u_t), where one u_c is counted; the u_t left
    over is 2^-29 of it (fp64/fp32), inside the second-order slack 1/(1 − 64·u_c) that :func:`_finish` applies.
    """

    compute: Mapping[str, str] = dataclasses.field(default_factory=dict)
    accumulation: Mapping[str, str] = dataclasses.field(default_factory=dict)
    eps: Mapping[str, str] = dataclasses.field(default_factory=dict)
    weight_offset: float = 0.0
    flush: Mapping[str, frozenset[str]] | frozenset[str] = frozenset()
    norm_input: str | None = None  # AddRMSNorm: "rounded" | "sum" (:func:`add_rmsnorm`); None: either

    def __bool__(self) -> bool:
        return bool(
            self.compute or self.accumulation or self.eps or self.weight_offset or self.flush or self.norm_input
        )

    def unmodelled(self, storage: Any) -> tuple[str, ...]:
        """The declarations, in storage dtype ``storage``, that the probabilistic tier's model (``sites``) does not
        describe — a declaration about another dtype is not one of them (issue 37: declaring fp64's compute dtype
        switched fp16's tier off). A compute dtype that holds t (fp32 for fp16, fp64 for fp32, t itself) is a
        model: the sites take u_c, and the roundings to t where c is wider. A demoted one (fp32 for fp64: inputs
        and weights rounded to c), an accumulation dtype narrower than c, an eps dtype, a weight offset and
        flushed inputs or outputs add errors the sites do not have: there the deterministic bound judges alone,
        and the result says so (``Bound.tier_off``). An accumulation as wide as c (Liger's and fla's declared
        fp32) is the sums the sites already have: ``_P.gamma_red`` gives the same constants."""
        name = fmt(storage).name
        out = []
        c = self.compute.get(name)
        if c and not _holds(c, storage):
            out.append(f"compute_dtype {c}")
        a = self.accumulation.get(name)  # one as wide as c: the sums the sites model, the bounds unchanged
        if a and fmt(a).u > fmt(c or upcast_dtype(fmt(storage).dtype)).u:
            out.append("accumulation_dtype")
        if name in self.eps:
            out.append("eps_dtype")
        if self.weight_offset:
            out.append("weight_offset")
        if self.flushes(storage) & {"input", "output"}:
            out.append("flush_subnormals")
        return tuple(out)

    def flushes(self, storage: Any) -> frozenset[str]:
        """Where subnormals of storage dtype ``storage`` may be flushed ("input", "output")."""
        if isinstance(self.flush, Mapping):
            return frozenset(self.flush.get(fmt(storage).name, ()))
        return frozenset(self.flush)


_ARITHMETIC: contextvars.ContextVar[Arithmetic | None] = contextvars.ContextVar("nanolm_arithmetic", default=None)
_NONE = Arithmetic()


def declared_arithmetic() -> Arithmetic:
    """The declaration every bound computed now honours (empty outside :func:`declared`)."""
    return _ARITHMETIC.get() or _NONE


@contextlib.contextmanager
def declared(arithmetic: Arithmetic | None) -> Iterator[Arithmetic]:
    """Every bound computed inside the block honours ``arithmetic`` (the law runner opens it per law run)."""
    token = _ARITHMETIC.set(arithmetic or _NONE)
    try:
        yield declared_arithmetic()
    finally:
        _ARITHMETIC.reset(token)


_SHADOWS: contextvars.ContextVar[Mapping[str, Arithmetic] | None] = contextvars.ContextVar(
    "nanolm_shadows", default=None
)


@contextlib.contextmanager
def shadowed(alternatives: Mapping[str, Arithmetic]) -> Iterator[None]:
    """Every bound computed inside the block also carries its ``abs`` under each of ``alternatives`` (name →
    arithmetic) in ``Bound.alternatives``: the law runner asks for the arithmetic without each declaration, so a
    run can tell whether its measurements needed it. Nothing is judged against them."""
    token = _SHADOWS.set(dict(alternatives) or None)
    try:
        yield
    finally:
        _SHADOWS.reset(token)


def _shadows(fn: Any) -> Any:
    """A public bound function that, under :func:`shadowed`, also evaluates itself under each alternative
    arithmetic (once, at the outermost call: the bounds it calls inside are not shadowed again)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        alternatives = _SHADOWS.get()
        if not alternatives:
            return fn(*args, **kwargs)
        token = _SHADOWS.set(None)
        try:
            out = fn(*args, **kwargs)
            others = {}
            for name, arithmetic in alternatives.items():
                with declared(arithmetic):
                    others[name] = fn(*args, **kwargs)
        finally:
            _SHADOWS.reset(token)
        if isinstance(out, Bound):
            return dataclasses.replace(out, alternatives={k: b.abs for k, b in others.items()})
        return tuple(
            dataclasses.replace(b, alternatives={k: o[i].abs for k, o in others.items()}) for i, b in enumerate(out)
        )

    return wrapper


def compute_dtype(dtype: Any) -> torch.dtype:
    """c: the declared compute dtype for this storage dtype (:func:`declared`), else the contract's policy
    (``nanolm_core._checks.upcast_dtype``: fp32 for fp16/bf16/fp32 storage, fp64 for fp64) — the one policy."""
    f = fmt(dtype)
    named = declared_arithmetic().compute.get(f.name)
    return fmt(named).dtype if named else upcast_dtype(f.dtype)


def sum_of_squares_limit(D: int, c: Any) -> float:
    """The largest Σx² of a row of D values that every summation order holds in the compute dtype c:
    max_c / (1 + D·u_c). Above it an accepted convention overflows (returns 0): ``Bound.overflow``, not judged."""
    f = fmt(c)
    return f.max / (1 + D * f.u)


def _holds(big: Any, small: Any) -> bool:
    """Every value of ``small`` is a value of ``big`` (precision and exponent range)."""
    b, s = fmt(big), fmt(small)
    return b.p >= s.p and b.emin <= s.emin and b.emax >= s.emax


@dataclasses.dataclass(frozen=True)
class _P:
    """Precisions of one evaluation: storage t, compute c (and the declared arithmetic ``a``)."""

    t: torch.dtype
    a: Arithmetic = dataclasses.field(default_factory=declared_arithmetic)
    c_: torch.dtype | None = None  # an explicit c (else compute_dtype under ``a``)

    @property
    def c(self) -> torch.dtype:
        if self.c_ is not None:
            return self.c_
        named = self.a.compute.get(fmt(self.t).name)
        return fmt(named).dtype if named else compute_dtype(self.t)

    @property
    def ut(self) -> float:
        return fmt(self.t).u

    @property
    def uc(self) -> float:
        return fmt(self.c).u

    @property
    def ua(self) -> float:
        """Unit roundoff of the accumulation (declared ``accumulation``, else c's)."""
        named = self.a.accumulation.get(fmt(self.t).name)
        return fmt(named).u if named else self.uc

    @property
    def narrow(self) -> bool:
        """A value of c may need rounding to be stored in t (the accepted roundings to t apply)."""
        return self.t != self.c and not _holds(self.t, self.c)

    @property
    def demoted(self) -> bool:
        """A value of t may need rounding to enter c (declared: c narrower than t, e.g. fp64 computed in fp32)."""
        return self.t != self.c and not _holds(self.c, self.t)

    @property
    def u_store(self) -> float:
        """A result stored in t: rounded to t, or — demoted — computed in c (u_c)."""
        return self.uc if self.demoted else self.ut

    @property
    def tiny_store(self) -> float:
        return self.tiny_c if self.demoted else self.tiny_t

    @property
    def tiny_t(self) -> float:
        """Half the subnormal spacing of t: the absolute error of a rounding to t in the subnormal range."""
        return fmt(self.t).smallest_subnormal / 2

    @property
    def tiny_c(self) -> float:
        """The smallest normal of c: the absolute error of an operation in c that underflows, flush-to-zero
        included (torch's vectorised CPU exp and GPU fast paths flush subnormal results)."""
        return fmt(self.c).smallest_normal

    @property
    def max_t(self) -> float:
        return fmt(self.t).max

    @property
    def tier_off(self) -> str:
        """Why the probabilistic tier cannot model this evaluation ("" where it can): the declarations in t that
        its sites lack (:meth:`Arithmetic.unmodelled`)."""
        names = self.a.unmodelled(self.t)
        return f"declared {', '.join(names)} in {fmt(self.t).name}: not in the tier's model" if names else ""

    @property
    def name(self) -> str:
        return f"t={fmt(self.t).name}, c={fmt(self.c).name}"

    def gamma_sum(self, n: int, per_term: int = 0) -> tuple[float, float]:
        """(any-order, pairwise) relative constants of an n-term sum in c (per_term roundings of each term in c,
        the additions in the declared accumulation dtype when there is one)."""
        return tuple(self.gamma_red(reduction_roundings(n, o), per_term) for o in ORDERS)  # type: ignore[return-value]

    def gamma_red(self, depth: int, per_term: int = 0) -> float:
        """Relative constant of ``depth`` additions after ``per_term`` roundings of each term:
        γ_(depth+per_term)(u_c), or, with a declared accumulation dtype a, (1 + γ_(depth+k)(u_a))(1 + γ_per_term(u_c))
        − 1, k = 1 when a is narrower than c (each term is rounded to a as it enters the accumulator)."""
        if self.ua == self.uc:
            return gamma(depth + per_term, self.uc)
        enter = 1 if self.ua > self.uc else 0
        return (1 + gamma(depth + enter, self.ua)) * (1 + gamma(per_term, self.uc)) - 1
