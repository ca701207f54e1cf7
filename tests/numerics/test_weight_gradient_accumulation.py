"""A weight used once per token: autograd sums the per-use weight gradients in the parameter's dtype t.

``tests/correct_impls/batch_invariant.py`` computes SwiGLU one token at a time, so each weight gradient is N per-token
GEMM results, each rounded to t, added in t as autograd accumulates the parameter's gradient — not one GEMM over the
rows accumulated in c and rounded once, which is the contract's default and what ``bounds.swiglu_vjp`` assumes
undeclared. In fp16 and bf16 that pattern is an accumulation in t, which the module declares (``accumulation_dtype``;
docs/laws.md, "Weight gradients summed over a parameter's uses"). Here the pattern is emulated with the per-token
gradients correctly rounded (``golden``, token by token) and summed in t in three orders, so the premise is built, not
read off one machine's GEMM: the undeclared bound does not admit it (the declaration is needed), the declared one does
(it is sufficient), and in fp32, where t is c, the undeclared bound admits it already.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import golden
from properties.numerics import bounds
from properties.numerics.bounds import Arithmetic

N, D, F = 160, 16, 40  # the gradient law's pinned case: 160 rows (2½ blocks of 64)
IN_T = Arithmetic(accumulation={"fp16": "fp16", "bf16": "bf16"})  # batch_invariant.py's declaration
ORDERS = ("forward", "reverse", "pairwise")


def _case(dtype: torch.dtype, same_tokens: bool) -> tuple[torch.Tensor, ...]:
    """x, the three weights and a cotangent, exact in ``dtype``; ``same_tokens``: every token and cotangent row equal
    (the per-token gradients are then N equal terms: a sum in t rounds them one way, the deterministic worst)."""
    rng = np.random.default_rng(N)
    x, g = rng.standard_normal((N, D)), rng.standard_normal((N, D))
    if same_tokens:
        x, g = np.repeat(x[:1], N, axis=0), np.repeat(g[:1], N, axis=0)
    ws = [rng.standard_normal(s) / np.sqrt(s[1]) for s in ((F, D), (F, D), (D, F))]
    return tuple(torch.from_numpy(a).to(dtype) for a in (x, *ws, g))


def _sum_in_t(terms: list[torch.Tensor], order: str) -> torch.Tensor:
    """Σ terms with every addition rounded to t (torch adds two tensors of t and rounds once: IEEE, any machine)."""
    if order == "pairwise":
        while len(terms) > 1:
            terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
        return terms[0]
    acc = torch.zeros_like(terms[0])
    for term in terms if order == "forward" else terms[::-1]:
        acc = acc + term
    return acc


@functools.lru_cache(maxsize=8)
def _per_token(dtype: torch.dtype, same_tokens: bool) -> list[tuple[torch.Tensor, ...]]:
    """(dW_gate, dW_up, dW_down) of each token alone, correctly rounded to t (the most accurate per-use GEMM)."""
    x, wg, wu, wd, g = _case(dtype, same_tokens)
    tokens = range(1 if same_tokens else N)
    one = [golden.swiglu_vjp(x[n : n + 1], wg, wu, wd, g[n : n + 1])[1:] for n in tokens]
    rounded = [tuple(d.rounded(dtype) for d in grads) for grads in one]
    return rounded * N if same_tokens else rounded


def _headroom(dtype: torch.dtype, same_tokens: bool, order: str, arithmetic: Arithmetic | None) -> float:
    """max over dW_gate, dW_up, dW_down of |emulated − golden| / allowed."""
    x, wg, wu, wd, g = _case(dtype, same_tokens)
    gold = golden.swiglu_vjp(x, wg, wu, wd, g)[1:]
    with bounds.declared(arithmetic):
        allowed = [b.allowed for b in bounds.swiglu_vjp(x, wg, wu, wd, g, dtype)[1:]]
    per_token = _per_token(dtype, same_tokens)
    worst = 0.0
    for k in range(3):
        got = _sum_in_t([grads[k] for grads in per_token], order).double().numpy()
        worst = max(worst, float(np.max(np.abs(got - gold[k].float64()) / allowed[k])))
    return worst


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_per_token_gradients_summed_in_t_exceed_the_undeclared_bound(dtype) -> None:
    """The declaration is needed: N equal per-token gradients added in t one at a time, as autograd accumulates
    them, err ~8× the undeclared bound (the one that sums over the rows in c; a pairwise tree in t would double equal
    terms exactly, but autograd does not add them so)."""
    for order in ("forward", "reverse"):
        assert _headroom(dtype, True, order, None) > 2, order


@pytest.mark.parametrize("same_tokens", [False, True], ids=["random tokens", "equal tokens"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_the_declared_accumulation_dtype_admits_per_token_gradients_summed_in_t(dtype, same_tokens) -> None:
    """The declaration is sufficient (the old model — no such declaration — fails this on equal tokens)."""
    for order in ORDERS:
        assert _headroom(dtype, same_tokens, order, IN_T) <= 1, order


@pytest.mark.parametrize("same_tokens", [False, True], ids=["random tokens", "equal tokens"])
def test_in_fp32_the_sum_in_t_is_the_sum_in_c_and_needs_no_declaration(same_tokens) -> None:
    for order in ORDERS:
        assert _headroom(torch.float32, same_tokens, order, None) <= 1, order
