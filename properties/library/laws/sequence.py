"""Laws of the sequence dimension: every earlier token is visible to every later one, at long sequence lengths too.

A sliding window, an attention restarted every chunk, or a block of keys skipped changes nothing while T is
short. The reach law isolates the path from one token j to the later tokens so that its answer is exact in
floating point for every correct implementation: the sequence is zero except token j, W_q = W_k = 0 (every
score is exactly 0, so attention is exactly uniform: p = 1/(t+1) rounded, never 0), W_v and W_o are
coordinate selections, and W_down = 0. Then out_t = p_t·v_j exactly rounded, coordinate by coordinate (every
other term is an exact zero): non-zero for every t > j — and exactly 0 for t < j (causality).
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from properties.library import strategies as S
from properties.library.assertions import as_f64, assert_bitwise_equal, fail
from properties.library.context import count_examples
from properties.library.harness import note
from properties.library.laws.block import block_forward
from properties.library.subject import Implementation
from properties.library.table import law

AXIS = "the sequence dimension: every earlier token reaches every later one"  # its column in the matrix
DType = torch.dtype
Data = st.DataObject


def reach_params(case: S.BlockCase) -> dict[str, torch.Tensor]:
    """W_q = W_k = 0, W_v = the first G·K coordinates, W_o = I, W_down = 0; the norms and W_gate, W_up as drawn."""
    c, p = case.config, case.params
    D, GK = c.dim, c.n_kv_heads * c.head_dim
    eye = torch.eye(D, dtype=p["attn.wo.weight"].dtype)
    zero = {k: torch.zeros_like(p[k]) for k in ("attn.wq.weight", "attn.wk.weight", "ffn.w_down.weight")}
    return {**p, **zero, "attn.wv.weight": eye[:GK].contiguous(), "attn.wo.weight": eye}


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
@example(data=S.REACH_PINS[f"T={S.LONG_T}, j=0"])
@example(data=S.REACH_PINS[f"T={S.LONGEST_T}, j=0"])
def block_every_earlier_token_reaches_the_last(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Token j reaches every later token, up to the last (j = 0 at T = 1024 included, and at T = 4097 in fp32: no
    window, no restart, no skipped block or chunk) and no earlier one: with x zero but token j, W_q = W_k = 0,
    W_v, W_o selections and W_down = 0, out_t = p_t·v_j ≠ 0 in every coordinate for t > j and out_t = 0 exactly
    for t < j."""
    rc = data.draw(S.reach_cases(dtype), label="case")
    if rc is None:  # a pin of another dtype
        count_examples(-1)
        assume(False)
    note(rc)
    c, j = rc.case, rc.j
    y = block_forward(impl, c.x, c.config, reach_params(c), dtype, device)
    assert_bitwise_equal(y[:, :j], torch.zeros_like(c.x[:, :j]), what=f"out of tokens < {j}", why="causal")
    assert_bitwise_equal(y[1:], torch.zeros_like(c.x[1:]), what="out of the other (all-zero) sequences")
    _assert_reaches(as_f64(y[0, j + 1 :]), j, c.x.shape[1])
