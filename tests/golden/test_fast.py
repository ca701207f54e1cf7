"""The exact fast paths against plain mpmath on small nasty cases: the Ozaki matrix–vector product (W unsliced on
its row grid, or sliced), the row-grid reading, chunked reading of the inputs, and the thread pool's manners."""

from __future__ import annotations

import threading

import mpmath
import numpy as np
import pytest
import torch

import golden
from golden import fast, framework
from golden.dd import DD

CTX = mpmath.MPContext()
CTX.prec = 3000  # exact for every sum of float64 products below


def _exact_matvec(W: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> list[list]:
    x = [[CTX.mpf(float(a)) + CTX.mpf(float(b)) for a, b in zip(*r, strict=True)] for r in zip(hi, lo, strict=True)]
    return [[CTX.fsum(CTX.mpf(float(w)) * v for w, v in zip(row, xr, strict=True)) for row in W] for xr in x]


def _rows(kind: str, rng: np.random.Generator, M: int, n: int) -> np.ndarray:
    """Weight matrices (float32 values, some bf16-exact) that stress the row-grid reading and the slicing."""
    W = rng.standard_normal((M, n))
    if kind == "bf16":
        return torch.from_numpy(W).to(torch.bfloat16).float().numpy()
    if kind == "fp32":
        return W.astype(np.float32)
    if kind == "tiny_entry":  # one entry 2^-60 of the row: the grid is too fine, W is sliced
        W[:, 3] = 2.0**-60
        return torch.from_numpy(W).to(torch.bfloat16).float().numpy()
    if kind == "subnormal":  # fp32 subnormals and a zero row
        W = (W * 2.0**-140).astype(np.float32)
        W[1] = 0.0
        W[2, ::2] = -0.0
        return W
    if kind == "powers_of_two":  # one significant bit per entry
        return (np.sign(W) * np.exp2(rng.integers(-20, 20, W.shape))).astype(np.float32)
    if kind == "huge_range":
        return (W * np.exp2(rng.integers(-100, 100, W.shape))).astype(np.float32)
    if kind == "same_sign":  # partial sums reach the exactness budget: one small entry makes the grid fine
        W = np.abs(W) + 1.0
        W[:, 0] = 2.0**-24
        return torch.from_numpy(W).to(torch.bfloat16).float().numpy()
    raise AssertionError(kind)


def _x(kind: str, rng: np.random.Generator, N: int, n: int) -> DD:
    hi = rng.standard_normal((N, n))
    if kind == "bf16":
        return DD.of(torch.from_numpy(hi).to(torch.bfloat16).double().numpy())
    if kind == "dd":  # double-double values with a tail
        return DD(hi, hi * 2.0**-60 * rng.standard_normal((N, n)))
    if kind == "range":
        return DD.of(hi * np.exp2(rng.integers(-200, 200, (N, n))))
    if kind == "positive":  # full significands of one sign: every slice holds full-width integers
        return DD(np.abs(hi) + 1.0, np.abs(hi) * 2.0**-60)
    raise AssertionError(kind)


@pytest.mark.parametrize("N", [1, 3, 17])  # 17: the row grids are read ahead (many rows)
@pytest.mark.parametrize("xk", ["bf16", "dd", "range", "positive"])
@pytest.mark.parametrize("wk", ["bf16", "fp32", "tiny_entry", "subnormal", "powers_of_two", "huge_range", "same_sign"])
def test_matvec_is_exact_to_2_pow_minus_100(wk: str, xk: str, N: int) -> None:
    rng = np.random.default_rng(hash((wk, xk, N)) % 2**32)
    W, x = _rows(wk, rng, 5, 160), _x(xk, rng, N, 160)  # enough terms that an inexact GEMM shows
    stats = framework.Stats()
    got = fast._matvec(W, x, False, 100, stats, framework.Deadline("t", 60))
    want = _exact_matvec(W, x.hi, x.lo)
    for r in range(N):
        for m in range(W.shape[0]):
            err = abs(CTX.mpf(float(got.hi[r, m])) + CTX.mpf(float(got.lo[r, m])) - want[r][m])
            assert err <= CTX.ldexp(abs(want[r][m]), -100), (wk, xk, r, m)
    assert stats.sum_bound_rel <= 2.0**-100


@pytest.mark.parametrize("N", [2, 16])
@pytest.mark.parametrize("sliced", [False, True])
def test_matvec_at_the_exactness_budget(sliced: bool, N: int) -> None:
    """Slice products that fill the bits the exactness argument allows, n = 256: bf16 rows of 1.9921875 with 16
    odd entries whose last bit is the grid unit — the row grid of 37 bits (W unsliced), or the first slice's grid
    of 28 bits, one entry of 2^-100 forcing the slicing — times x in (−2, −1) with full significands. A slice
    wider than the argument allows makes a GEMM sum round and the result wrong: two bits for the unsliced form,
    three for the sliced one (the rest is the slack of the extraction: a slice holds integers below 2^(b − 1))."""
    n = 256
    W = np.full((3, n), 1.9921875, dtype=np.float32)
    W[:, :16] = np.array([[255], [253], [249]]) * (2.0**-26 if sliced else 2.0**-36)
    if sliced:
        W[:, 16] = 2.0**-100
    W[1] *= -1
    u = np.random.default_rng(5).random((N, n))
    x = DD(-(1.0 + u), u * 2.0**-60)
    got = fast._matvec(W, x, False, 100, framework.Stats(), framework.Deadline("t", 60))
    want = _exact_matvec(W, x.hi, x.lo)
    for r in range(N):
        for m in range(3):
            err = abs(CTX.mpf(float(got.hi[r, m])) + CTX.mpf(float(got.lo[r, m])) - want[r][m])
            assert err <= CTX.ldexp(abs(want[r][m]), -100), (r, m)


def test_cancelling_outputs_are_recomputed_exactly() -> None:
    """Outputs that cancel to (nearly) zero: the x remainder's bound exceeds 2^-100 of them, so they are redone
    with x sliced completely; the result is exact."""
    rng = np.random.default_rng(3)
    n = 64
    x = DD(rng.standard_normal((2, n)), rng.standard_normal((2, n)) * 2.0**-58)
    W = torch.from_numpy(rng.standard_normal((5, n))).to(torch.bfloat16).float().numpy()
    W[1] = 0.0
    W[1, :2] = 1.0  # x0 + x1, and below x1 := −x0 + tiny
    x.hi[:, 1] = -x.hi[:, 0]
    x.lo[:, 1] = 2.0**-80
    got = fast._matvec(W, x, False, 100, framework.Stats(), framework.Deadline("t", 60))
    want = _exact_matvec(W, x.hi, x.lo)
    for r in range(2):
        for m in range(5):
            err = abs(CTX.mpf(float(got.hi[r, m])) + CTX.mpf(float(got.lo[r, m])) - want[r][m])
            assert err <= CTX.ldexp(abs(want[r][m]), -100)


@pytest.mark.parametrize("kind", ["bf16", "fp32", "tiny_entry", "subnormal", "powers_of_two", "huge_range"])
def test_row_grid_holds_every_entry(kind: str) -> None:
    """Every entry is an integer multiple of g below 2^b·g, b is tight for a row of known span, max|w| is read."""
    W = _rows(kind, np.random.default_rng(4), 9, 50)
    g, b, top = fast._row_grid(W)
    for i, row in enumerate(W.astype(np.float64)):
        q = row / g[i]  # exact: g is a power of two and the quotients stay normal
        assert np.all(q == np.round(q)) and np.all(np.abs(q) < 2.0 ** b[i]), (kind, i)
        assert top[i] == np.max(np.abs(row))
    row = np.array([[1.5, -0.25, 2.0**-10, 0.0]], dtype=np.float32)  # exponents 0 … −10, 2 significant bits
    assert [v[0] for v in fast._row_grid(row)] == [2.0**-11, 12, 1.5]


def test_bf16_inputs_are_read_exactly_with_finiteness() -> None:
    """Every bf16 bit pattern widens to the fp32 torch gives (exact), inf and NaN included; ``finite`` says so."""
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    (got,) = inputs = framework.read({"x": every.reshape(256, 256)})
    want = every.float().numpy().reshape(256, 256)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)) and not inputs.finite
    big = torch.randn(3, 1 << 19).to(torch.bfloat16)  # chunked on the pool
    assert framework.read({"a": torch.ones(2), "w": big}).finite
    big[2, -1] = float("nan")
    (got, got_big) = inputs = framework.read({"a": torch.ones(2), "w": big})
    assert not inputs.finite and np.array_equal(got_big[:2], big[:2].float().numpy())


def test_nonfinite_bf16_weights_give_the_uncertified_value() -> None:
    wg = torch.randn(6, 4).to(torch.bfloat16)
    wg[0, 0] = float("inf")
    g = golden.swiglu(torch.randn(2, 4).to(torch.bfloat16), wg, torch.randn(6, 4), torch.randn(4, 6))
    assert g.info["certified"] is False


def test_the_pool_leaves_torch_thread_counts_as_they_were() -> None:
    before = torch.get_num_threads()
    golden.swiglu(torch.randn(1, 512), torch.randn(2048, 512), torch.randn(2048, 512), torch.randn(512, 2048))
    seen: list[int] = []
    t = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    t.start()
    t.join()
    assert torch.get_num_threads() == before and seen == [before]


# --------------------------------------------------------------------------------------- sampled rows
def test_sampled_rows_are_the_rows_of_the_whole() -> None:
    torch.manual_seed(9)
    x, w = torch.randn(3, 5, 12).to(torch.bfloat16), torch.randn(12)
    idx = [14, 0, 7, 7]
    whole = golden.rmsnorm(x, w, 1e-6)
    some = golden.rmsnorm(x, w, 1e-6, rows=torch.tensor(idx))
    assert some.shape == (4, 12) and np.array_equal(some.hi, whole.hi.reshape(15, 12)[idx])
    wg, wu, wd = torch.randn(20, 12), torch.randn(20, 12), torch.randn(12, 20)
    s = golden.swiglu(x, wg, wu, wd, rows=np.array(idx), validate="full")
    assert s.info["full_check_rel"] <= 2.0**-100
    assert torch.equal(
        s.rounded(torch.float32), golden.swiglu(x, wg, wu, wd).rounded(torch.float32).reshape(15, 12)[idx]
    )
    ln = golden.layernorm(x, w, w, 1e-5, rows=[2])
    assert np.array_equal(ln.hi, golden.layernorm(x[0, 2], w, w, 1e-5).hi[None])


def test_sampled_rows_of_a_huge_batch_read_only_those_rows() -> None:
    """70 000 rows (past a CUDA grid's 65 535): the golden of two of them, without converting the others."""
    x = torch.randn(70_000, 64).to(torch.bfloat16)
    g = golden.rmsnorm(x, torch.ones(64), 1e-6, rows=[0, 69_999])
    assert torch.equal(
        g.rounded(torch.bfloat16), golden.rmsnorm(x[[0, 69_999]], torch.ones(64), 1e-6).rounded(torch.bfloat16)
    )


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([15], r"in \[0, 15\)"),
        ([-1], r"in \[0, 15\)"),
        ([[0, 1]], "1-D"),
        ([0.5], "integer"),
        (torch.tensor([True]), "integer"),
    ],
)
def test_bad_rows_are_refused_before_any_work(rows, match: str) -> None:
    with pytest.raises(ValueError, match=f"golden.rmsnorm: rows.*{match}"):
        golden.rmsnorm(torch.randn(3, 5, 4), torch.ones(4), 1e-6, rows=rows)


def _small_block(dtype: torch.dtype = torch.float32):
    from nanolm_core import Block, ModelConfig

    torch.manual_seed(11)
    cfg = ModelConfig(dim=16, n_heads=4, n_kv_heads=2, ffn_dim=24)
    blk = Block(cfg)
    with torch.no_grad():
        for p in blk.parameters():
            p.copy_(torch.randn_like(p) * (0.4 if p.dim() > 1 else 1.0))
    return blk.to(dtype).state_dict(), cfg, torch.randn(2, 7, 16).to(dtype)


def test_sampled_block_positions_are_those_of_the_whole_block() -> None:
    """rows= on the Block and on attention: keys and values at every position, the outputs only where asked."""
    sd, cfg, x = _small_block()
    idx = [13, 0, 6, 7]  # (b, t) = (1, 6), (0, 0), (0, 6), (1, 0)
    whole = golden.block(x, sd, cfg)
    some = golden.block(x, sd, cfg, rows=idx, validate="full")
    assert some.shape == (4, 16) and some.info["full_check_rel"] <= 2.0**-100
    assert torch.equal(some.rounded(torch.float32), whole.rounded(torch.float32).reshape(14, 16)[idx])
    att = [sd[f"attn.{n}.weight"] for n in ("wq", "wk", "wv", "wo")]
    a = golden.attention(x, *att, cfg, rows=torch.tensor(idx), validate="full")
    assert a.info["full_check_rel"] <= 2.0**-100
    assert torch.equal(
        a.rounded(torch.float32), golden.attention(x, *att, cfg).rounded(torch.float32).reshape(14, 16)[idx]
    )


def test_sampled_block_rows_are_checked_first() -> None:
    sd, cfg, x = _small_block()
    with pytest.raises(ValueError, match=r"golden.block: rows must be in \[0, 14\)"):
        golden.block(x, sd, cfg, rows=[14])
