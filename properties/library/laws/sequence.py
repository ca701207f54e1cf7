"""Laws of the sequence dimension: every earlier token is visible to every later one, at long sequence lengths too.

A sliding window, an attention restarted every chunk, or a block of keys skipped changes nothing while T is
short. The reach law isolates the path from one token j to the later tokens so that its answer is exact in
floating point for every correct implementation: the sequence is zero except token j, W_q = W_k = 0 (every
score is exactly 0, so attention is exactly uniform: p = 1/(t+1) rounded, never 0), W_v and W_o are
coordinate selections, and W_down = 0. Then out_t = p_t·v_j exactly rounded, coordinate by coordinate (every
other term is an exact zero): non-zero for every t > j — and exactly 0 for t < j (causality).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from properties.library import strategies as S
from properties.library.assertions import as_f64, assert_bitwise_equal, fail
from properties.library.context import count_examples
from properties.library.harness import block_forward, note
from properties.library.subject import Implementation
from properties.library.table import law

AXIS = "the sequence dimension: every earlier token reaches every later one"  # its column in the matrix
DType = torch.dtype
Data = st.DataObject


class ReachCase(NamedTuple):
    """A Block case whose x is zero except token j of the first sequence (the other sequences all zero)."""

    case: S.BlockCase
    j: int

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "token j": self.j}


def reach_params(case: S.BlockCase) -> dict[str, torch.Tensor]:
    """W_q = W_k = 0, W_v = the first G·K coordinates, W_o = I, W_down = 0; the norms and W_gate, W_up as drawn."""
    c, p = case.config, case.params
    D, GK = c.dim, c.n_kv_heads * c.head_dim
    eye = torch.eye(D, dtype=p["attn.wo.weight"].dtype)
    zero = {k: torch.zeros_like(p[k]) for k in ("attn.wq.weight", "attn.wk.weight", "ffn.w_down.weight")}
    return {**p, **zero, "attn.wv.weight": eye[:GK].contiguous(), "attn.wo.weight": eye}


def _one_token(case: S.BlockCase, j: int) -> S.BlockCase:
    """x zero but token j of the first sequence, whose entries are all ≥ max|x_j|/8 in magnitude (exact: a power
    of two below the largest): every normalised entry is ≥ 1/8, so p·v_j stays far from underflow."""
    row = case.x[0, j].double()
    floor = float(row.abs().max()) / 8 or 1.0
    row = torch.where(row.abs() < floor, torch.full_like(row, floor).copysign(row), row)  # fp64 throughout
    x = torch.zeros_like(case.x)
    x[0, j] = row.to(case.x.dtype)
    return case._replace(x=x)


@st.composite
def reach_cases(draw: st.DrawFn, dtype: DType) -> ReachCase:
    """A drawn config and T ∈ 2…8, token j ∈ 0…T−2 of the first sequence non-zero (every entry non-zero)."""
    case = draw(S.block_cases(dtype, max_dim=32, max_tokens=8), label="case")
    if case.x.shape[1] < 2:
        case = case._replace(x=torch.cat([case.x, case.x], dim=1))
    j = draw(st.integers(0, case.x.shape[1] - 2), label="token j")
    return ReachCase(_one_token(case, j), j)


def _long_reach(dtype: DType, j: int = 0) -> ReachCase:
    return ReachCase(_one_token(S.long_block_case(dtype), j), j)


LONGEST_T = 4097  # past every chunk size a kernel uses: 512, 1024, 2048 and 4096


def _longest_reach(dtype: DType) -> ReachCase | None:
    """T = 4097, token 0 (one head, K = 8: the attention matrix alone is 4097² values) — in fp32 only (None
    elsewhere: the other dtypes reach T = 1024; 4097 costs a second per dtype)."""
    if dtype != torch.float32:
        return None
    config = S.fixed_config(H=1, G=1, K=8, F=8, max_seq_len=LONGEST_T)
    x = torch.from_numpy(np.random.default_rng(LONGEST_T).standard_normal((1, LONGEST_T, config.dim))).to(dtype)
    case = S.BlockCase(config, x, S.block_params(config, dtype, seed=LONGEST_T), 1.0, 1.0)
    return ReachCase(_one_token(case, 0), 0)


REACH_PINS = {
    f"T={S.LONG_T}, j=0": S.Pin(f"T={S.LONG_T}, j=0", _long_reach),
    f"T={LONGEST_T}, j=0": S.Pin(f"T={LONGEST_T}, j=0 (fp32)", _longest_reach),
}


def _assert_reaches(later: np.ndarray, j: int, T: int) -> None:
    """Every later token's output (rows of ``later``: tokens j+1 … T−1) is finite and non-zero in every coordinate."""
    broken = np.flatnonzero((~np.isfinite(later)).any(axis=-1))  # NaN ≠ 0, but it is no reach: p·v_j is finite
    if broken.size:
        fail(f"out[0, {j + 1 + int(broken[0])}] is not finite (exact: p·v_j, finite): {broken.size} later tokens")
    blind = np.flatnonzero((later == 0).any(axis=-1))
    if blind.size:
        t = j + 1 + int(blind[0])
        fail(
            f"token {j} does not reach token {t} (out[0, {t}] has {int((later[blind[0]] == 0).sum())} zero "
            f"coordinates; exact: p·v_j ≠ 0 in each): {blind.size} of {later.shape[0]} later tokens blind to it, "
            f"first {t}, last {j + 1 + int(blind[-1])} (T = {T})"
        )


@law("Block", cost=4)
@given(data=st.data())
@example(data=REACH_PINS[f"T={S.LONG_T}, j=0"])
@example(data=REACH_PINS[f"T={LONGEST_T}, j=0"])
def block_every_earlier_token_reaches_the_last(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Token j reaches every later token, up to the last (j = 0 at T = 1024 included, and at T = 4097 in fp32: no
    window, no restart, no skipped block or chunk) and no earlier one: with x zero but token j, W_q = W_k = 0,
    W_v, W_o selections and W_down = 0, out_t = p_t·v_j ≠ 0 in every coordinate for t > j and out_t = 0 exactly
    for t < j."""
    rc = data.draw(reach_cases(dtype), label="case")
    if rc is None:  # a pin of another dtype
        count_examples(-1)
        assume(False)
    note(rc)
    c, j = rc.case, rc.j
    y = block_forward(impl, c.x, c.config, reach_params(c), dtype, device)
    assert_bitwise_equal(y[:, :j], torch.zeros_like(c.x[:, :j]), what=f"out of tokens < {j}", why="causal")
    assert_bitwise_equal(y[1:], torch.zeros_like(c.x[1:]), what="out of the other (all-zero) sequences")
    _assert_reaches(as_f64(y[0, j + 1 :]), j, c.x.shape[1])
