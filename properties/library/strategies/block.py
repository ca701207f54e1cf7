"""The Block's drawn cases: configs, the contract's state_dict (``block_params``), x and weights (``block_cases``),
x perturbed from a token on (``causal_cases``), sharp cases for the probabilistic tier (``sharp_block_cases``), and
the query positions a long sequence is judged at (``long_positions``), 80 rows for the parameter gradients
(``param_grad_cases``), and x zero but one token (``reach_cases``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
from hypothesis import strategies as st

from nanolm_core.config import ModelConfig
from properties.library.strategies.code_paths import PathCase, path_values
from properties.library.strategies.values import linear_weight, rows, summarise_kinds


@st.composite
def configs(draw: st.DrawFn, *, max_dim: int = 48, max_seq_len: int = 16) -> ModelConfig:
    """A small ModelConfig: H ∈ 1…4, G ∈ {1, H, a divisor strictly between}, even K, explicit small F."""
    H = draw(st.integers(1, 4), label="n_heads")
    divisors = [g for g in range(1, H + 1) if H % g == 0]
    G = draw(st.sampled_from(divisors), label="n_kv_heads")
    K = draw(st.sampled_from([k for k in (2, 4, 6, 8, 12, 16) if H * k <= max_dim]), label="head_dim")
    D = H * K
    F = draw(st.integers(1, 3 * D), label="ffn_dim")
    theta = draw(st.sampled_from((10000.0, 500000.0, 10.0)), label="rope_theta")
    eps = draw(st.sampled_from((1e-6, 1e-5)), label="norm_eps")
    return ModelConfig(
        dim=D,
        n_layers=1,
        n_heads=H,
        n_kv_heads=G,
        vocab_size=8,
        max_seq_len=max_seq_len,
        norm_eps=eps,
        rope_theta=theta,
        ffn_dim=F,
    )


def fixed_config(H: int, G: int, K: int, F: int | None = None, max_seq_len: int = 16) -> ModelConfig:
    """A config built from H, G, K (tests and examples)."""
    return ModelConfig(
        dim=H * K, n_layers=1, n_heads=H, n_kv_heads=G, vocab_size=8, max_seq_len=max_seq_len, ffn_dim=F or 2 * H * K
    )


class BlockCase(NamedTuple):
    """Inputs of one Block check: config, x (B, T, D) and the contract's state_dict."""

    config: ModelConfig
    x: torch.Tensor
    params: dict[str, torch.Tensor]
    scale: float
    logit_scale: float

    def describe(self) -> dict[str, object]:
        c = self.config
        return {
            "shape": tuple(self.x.shape),
            "D": c.dim,
            "config": f"H={c.n_heads} G={c.n_kv_heads} K={c.head_dim} F={c.ffn_dim} theta={c.rope_theta:g}",
            "weight scale": self.scale,
            "q/k scale": self.logit_scale,
        }


def block_params(
    config: ModelConfig,
    dtype: torch.dtype,
    seed: int,
    scale: float = 1.0,
    logit_scale: float = 1.0,
    gamma: str = "random",
) -> dict[str, torch.Tensor]:
    """The contract's Block state_dict with random weights (q/k scaled by ``logit_scale`` for large logits)."""
    D, H, G, K, F = config.dim, config.n_heads, config.n_kv_heads, config.head_dim, config.ffn_dim
    rng = np.random.default_rng(seed)

    def g() -> torch.Tensor:
        v = rng.uniform(0.5, 1.5, D) * (rng.choice((-1.0, 1.0), D) if gamma == "random" else 1.0)
        return torch.from_numpy(v if gamma == "random" else np.ones(D)).to(dtype)

    def w(o: int, i: int, s: float) -> torch.Tensor:
        return linear_weight(o, i, dtype, int(rng.integers(0, 2**63 - 1)), s)

    return {
        "attn_norm.weight": g(),
        "ffn_norm.weight": g(),
        "attn.wq.weight": w(H * K, D, logit_scale),
        "attn.wk.weight": w(G * K, D, logit_scale),
        "attn.wv.weight": w(G * K, D, scale),
        "attn.wo.weight": w(D, H * K, scale),
        "ffn.w_gate.weight": w(F, D, scale),
        "ffn.w_up.weight": w(F, D, scale),
        "ffn.w_down.weight": w(D, F, scale),
    }


@st.composite
def block_cases(
    draw: st.DrawFn, dtype: torch.dtype, *, max_dim: int = 48, max_tokens: int = 6, config: ModelConfig | None = None
) -> BlockCase:
    """A config, x of shape (B, T, D) with B ∈ 1…2, T ∈ 1…max_tokens, and random weights.

    q/k weight scale up to 2^3 reaches attention logits of tens (near one-hot softmax rows).
    """
    config = draw(configs(max_dim=max_dim), label="config") if config is None else config
    B = draw(st.integers(1, 2), label="B")
    T = draw(st.integers(1, max_tokens), label="T")
    kinds = ("normal", "mean_shifted", "outlier", "constant", "tiny_and_huge")
    x = draw(rows(dtype, config.dim, batch=(B, T), kinds=kinds), label="x").x
    if dtype in (torch.float16, torch.bfloat16):
        x = x.clamp(-64, 64)
    scale = 2.0 ** draw(st.integers(-3, 1), label="weight scale exponent")
    logit_scale = 2.0 ** draw(st.integers(-2, 3), label="q/k scale exponent")
    seed = draw(st.integers(0, 2**63 - 1), label="weight seed")
    return BlockCase(config, x, block_params(config, dtype, seed, scale, logit_scale), scale, logit_scale)


class CausalCase(NamedTuple):
    """A Block case with T ≥ 2, a token t ≥ 1 and ``other``: x with tokens t… redrawn (earlier tokens kept)."""

    case: BlockCase
    t: int
    other: torch.Tensor

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "perturbed from token": self.t}


@st.composite
def causal_cases(draw: st.DrawFn, dtype: torch.dtype) -> CausalCase:
    """A Block case with T ≥ 2 and x perturbed from a drawn token t ≥ 1 on."""
    config = draw(configs(max_dim=32), label="config")
    case = draw(block_cases(dtype, config=config, max_tokens=6), label="case")
    B, T, D = case.x.shape
    if T < 2:
        extra = draw(rows(dtype, D, batch=(B, 1), kinds=("normal",)), label="extra token").x
        case = case._replace(x=torch.cat([case.x, extra], dim=1))
        T = 2
    t = draw(st.integers(1, T - 1), label="t")
    fresh = draw(rows(dtype, D, batch=(B, T - t), kinds=("normal", "mean_shifted", "outlier")), label="new tokens").x
    other = case.x.clone()
    other[:, t:] = fresh
    return CausalCase(case, t, other)


# ---------------------------------------------------------------------------------------------- sensitive cases
# (issue 18: sharp verdicts) Cases whose output depends on every stage, drawn with independent random signs so that
# the probabilistic tier of the bounds judges them (``bounds``' drawn inputs): attention far from uniform (q/k scale up
# to 2³: the largest probability of a row is large, so a wrong score or a wrong probability moves the output), RoPE
# angles of several radians at every position (rope_theta 10 among the bases), every row "normal" (random signs and
# magnitudes) but one case in four with a structured row (constant, same sign, an outlier, mixed scales: the
# deterministic tier's cases).


class SharpBlockCase(NamedTuple):
    """A Block case and the regime of each of its B·T rows."""

    case: BlockCase
    kinds: tuple[str, ...]

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "rows": summarise_kinds(self.kinds)}


@st.composite
def sharp_block_cases(draw: st.DrawFn, dtype: torch.dtype, *, max_dim: int = 32, max_tokens: int = 8) -> SharpBlockCase:
    """A config (H ∈ {1, 2, 4}, any G, K ∈ {4, 6, 8, 16}: D ≥ 4, so the rows' sums of squares have a model), x
    (B, T, D) with 2 ≤ T ≤ max_tokens, random weights of scale 2^-2 … 2^1 and q/k scale 2^0 … 2^3; one case in eight
    with structured rows."""
    H = draw(st.sampled_from((1, 2, 4)), label="n_heads")
    G = draw(st.sampled_from([g for g in (1, 2, 4) if H % g == 0]), label="n_kv_heads")
    K = draw(st.sampled_from([k for k in (4, 6, 8, 16) if H * k <= max_dim]), label="head_dim")
    D = H * K
    config = ModelConfig(
        dim=D, n_layers=1, n_heads=H, n_kv_heads=G, vocab_size=8, max_seq_len=max_tokens,
        norm_eps=draw(st.sampled_from((1e-6, 1e-5)), label="norm_eps"),
        rope_theta=draw(st.sampled_from((10000.0, 500000.0, 10.0)), label="rope_theta"),
        ffn_dim=draw(st.integers(max(1, D // 2), 3 * D), label="ffn_dim"),
    )  # fmt: skip
    B = draw(st.integers(1, 2), label="B")
    T = draw(st.integers(2, max_tokens), label="T")
    if draw(st.integers(0, 7), label="structured row?") == 0:
        kinds = ("normal", "mean_shifted", "outlier", "constant", "tiny_and_huge")
        drawn = draw(rows(dtype, config.dim, batch=(B, T), kinds=kinds, scale_exps=(-4, 4)), label="x")
        xt, row_kinds = drawn.x, drawn.kinds
    else:  # random rows from a drawn seed (element-wise draws start from simple, repeated values)
        rng = np.random.default_rng(draw(st.integers(0, 2**64 - 1), label="x seed"))
        xt = torch.from_numpy(rng.standard_normal((B, T, config.dim)) * 2.0 ** rng.integers(-3, 4)).to(dtype)
        row_kinds = ("normal",) * (B * T)
    xt = xt.clamp(-64, 64) if dtype in (torch.float16, torch.bfloat16) else xt
    scale = 2.0 ** draw(st.integers(-2, 1), label="weight scale exponent")
    logit_scale = 2.0 ** draw(st.integers(0, 3), label="q/k scale exponent")
    seed = draw(st.integers(0, 2**63 - 1), label="weight seed")
    case = BlockCase(config, xt, block_params(config, dtype, seed, scale, logit_scale), scale, logit_scale)
    return SharpBlockCase(case, row_kinds)


def long_positions(T: int, n: int = 24, last: int = 8) -> np.ndarray:
    """A sample of query positions of a long sequence, judged against golden: the last ``last`` (every key before
    them), each power of two and its neighbours (block boundaries of real kernels), and ``n`` evenly spaced."""
    if T <= n + last:
        return np.arange(T)
    powers = [p + d for p in (2**k for k in range(1, T.bit_length())) for d in (-1, 0) if 0 <= p + d < T]
    return np.unique(np.concatenate([np.arange(T - last, T), powers, np.linspace(0, T - 1, n).astype(int)]))


GRAD_ROWS = (2, 40)  # B·T = 80 rows: more than one block of 64 in every weight gradient's reduction


class ParamGradCase(NamedTuple):
    """A Block config, x of shape (2, 40, D) and weights, all from one seed (80 rows: drawn element-wise would be
    slow and shrink no better)."""

    case: BlockCase

    def describe(self) -> dict[str, object]:
        return self.case.describe()


def param_grad_case(config: ModelConfig, dtype: torch.dtype, seed: int) -> ParamGradCase:
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((*GRAD_ROWS, config.dim)) + 0.25).to(dtype)
    return ParamGradCase(BlockCase(config, x, block_params(config, dtype, seed + 1, 0.5, 1.0), 0.5, 1.0))


@st.composite
def param_grad_cases(draw: st.DrawFn, dtype: torch.dtype) -> ParamGradCase:
    config = draw(configs(max_dim=24, max_seq_len=GRAD_ROWS[1]), label="config")
    return param_grad_case(config, dtype, draw(st.integers(0, 2**32), label="seed"))


class ReachCase(NamedTuple):
    """A Block case whose x is zero except token j of the first sequence (the other sequences all zero)."""

    case: BlockCase
    j: int

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "token j": self.j}


def one_token(case: BlockCase, j: int) -> BlockCase:
    """x zero but token j of the first sequence, whose entries are all ≥ max|x_j|/8 in magnitude (exact: a power
    of two below the largest): every normalised entry is ≥ 1/8, so p·v_j stays far from underflow."""
    row = case.x[0, j].double()
    floor = float(row.abs().max()) / 8 or 1.0
    row = torch.where(row.abs() < floor, torch.full_like(row, floor).copysign(row), row)  # fp64 throughout
    x = torch.zeros_like(case.x)
    x[0, j] = row.to(case.x.dtype)
    return case._replace(x=x)


@st.composite
def reach_cases(draw: st.DrawFn, dtype: torch.dtype) -> ReachCase:
    """A drawn config and T ∈ 2…8, token j ∈ 0…T−2 of the first sequence non-zero (every entry non-zero)."""
    case = draw(block_cases(dtype, max_dim=32, max_tokens=8), label="case")
    if case.x.shape[1] < 2:
        case = case._replace(x=torch.cat([case.x, case.x], dim=1))
    j = draw(st.integers(0, case.x.shape[1] - 2), label="token j")
    return ReachCase(one_token(case, j), j)


# ---------------------------------------------------------------------------------------------- code-path sizes
def _path(name: str, B: int, T: int, H: int, K: int, F: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        config = fixed_config(H=H, G=1, K=K, F=F, max_seq_len=max(16, T))
        x = path_values((B, T, config.dim), dtype, B * T, mean=0.25)
        params = block_params(config, dtype, seed=B + T, logit_scale=2.0)
        return PathCase(name, (x,), params, {"config": config})

    return build


# The record's ``paths`` (laws/paths.py): batch × heads past the attention grid, head dim and FFN width off powers of 2
BLOCK_PATHS: dict[str, Callable[[torch.dtype], PathCase]] = {
    "B·H past 2^16": _path("B = 32,769, H = 2: 65,538 (batch, head) programs, 65,538 rows", 32769, 2, 2, 4, 8),
    "K, F = 2^k + 2, 2^k + 1": _path("B = 3, T = 5, K = 34 = 2^5 + 2, F = 65 = 2^6 + 1", 3, 5, 2, 34, 65),
    "B·H = 4,098": _path("B = 2,049, H = 2: 4,098 (batch, head) programs (the step before 2^16)", 2049, 2, 2, 4, 8),
}
