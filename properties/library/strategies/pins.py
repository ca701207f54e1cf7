"""Pinned cases: ``Pin`` (a case that stands in for a law's draw, ``@example(data=pin)``), ``pinned``, and the pins
the laws run in every profile: corner rows, wide rows, model widths and FFN widths, many rows, long sequences,
GQA, extreme attention logits, the 16-bit backward at T = 513, the call-protocol cases, AddRMSNorm's corners."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from hypothesis import example

from properties.library import context
from properties.library.strategies.add_rmsnorm import AddGradCase, AddRMSNormCase, sum_corners
from properties.library.strategies.block import (
    GRAD_ROWS,
    BlockCase,
    CausalCase,
    ReachCase,
    SharpBlockCase,
    block_params,
    fixed_config,
    one_token,
    param_grad_case,
)
from properties.library.strategies.rmsnorm import (
    DomainCase,
    RMSNormCase,
    RowCase,
    overflow_threshold,
    reaches_threshold,
    rows_at_threshold,
)
from properties.library.strategies.swiglu import SwiGLUCase, TokenCase
from properties.library.strategies.values import GradCase, cotangent, linear_weight


class Pin:
    """A pinned case for ``@example(data=Pin(...))``: stands in for ``data`` and returns the case it builds.

    Laws draw exactly one composite case (label "case"); a Pin answers that draw with ``build(dtype)``,
    the dtype of the law run in progress (fp32 outside a run). A law run under call protocols
    (``properties.library.protocols``) also draws its protocol (label "protocol"): a Pin answers that with its
    own ``protocol`` (None: the plain call), ``Pin.under(p)`` is the same case under protocol p.
    """

    def __init__(self, name: str, build: Callable[[torch.dtype], Any], protocol: Any = None) -> None:
        self.name, self.build, self.protocol = name, build, protocol

    def draw(self, strategy: Any, label: str | None = None) -> Any:
        if label == "protocol":
            return self.protocol
        ctx = context.current()
        return self.build(ctx.dtype if ctx is not None else torch.float32)

    def under(self, protocol: Any) -> Pin:
        """This pin's case, called under ``protocol``."""
        return Pin(self.name, self.build, protocol)

    def __repr__(self) -> str:
        return f"Pin({self.name!r})" if self.protocol is None else f"Pin({self.name!r}, under {self.protocol})"


def pinned(pins: dict[str, Pin]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@example(data=pin)`` for every pin of ``pins``, in order."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for pin in reversed(list(pins.values())):
            func = example(data=pin)(func)
        return func

    return decorate


# ---------------------------------------------------------------------------------------------- rows (RMSNorm)


def _rows_case(
    values: list[list[float]],
    kinds: tuple[str, ...],
    eps: float = 1e-6,
    gamma: str = "random_signed",
) -> Callable[[torch.dtype], RMSNormCase]:
    def build(dtype: torch.dtype) -> RMSNormCase:
        x = torch.tensor(values, dtype=torch.float64).to(dtype)
        D = x.shape[-1]
        w = torch.linspace(-1.5, 1.75, D, dtype=torch.float64) if gamma != "ones" else torch.ones(D)
        if gamma == "tiny_and_large":  # |γ| from 2^-8 to 2^4: a gain far from 1 (Gemma's 1 + w loses γ's bits)
            w = w * 2.0 ** torch.linspace(-8, 4, D, dtype=torch.float64).round()
        return RMSNormCase(x, w.to(dtype), eps, kinds, gamma)

    return build


def _fp16_safe(v: float, dtype: torch.dtype) -> float:
    return min(v, 3e4) if dtype == torch.float16 else v


def _subnormal_row(dtype: torch.dtype) -> RMSNormCase:
    # Smallest normal: the row lies entirely below it (fp64 uses fp32's: x² of fp64 subnormals underflows to 0
    # in any fp64 computation, and bounds.rmsnorm does not yet cover that regime).
    tiny = float(torch.finfo(torch.float32 if dtype == torch.float64 else dtype).tiny)
    x = torch.tensor([[tiny / 2, -tiny / 4, tiny / 8, tiny * 0.75, -tiny / 2**3, 0.0]], dtype=torch.float64)
    return _rows_case(x.tolist(), ("eps_dominated",), eps=1e-6)(dtype)


def _wide_rows(dtype: torch.dtype, D: int = 512, n: int = 2) -> RMSNormCase:
    # Full-mantissa values of non-zero mean (seeded, exact in dtype): long reductions show their rounding here.
    x = torch.from_numpy(np.random.default_rng(D).standard_normal((n, D)) + 0.5).to(dtype)
    w = torch.from_numpy(1 + 0.1 * np.random.default_rng(D + 1).standard_normal(D)).to(dtype)
    return RMSNormCase(x, w, 1e-6, ("normal", "mean_shifted"), "random_positive")


def _wide_row_case(dtype: torch.dtype) -> RowCase:
    # Four full-mantissa rows, k = 1: a kernel whose reduction depends on the row count shows it here.
    case = _wide_rows(dtype, D=1024, n=4)
    return RowCase(case, 0, case.x.flip(0).contiguous())


RMSNORM_PINS = {
    "wide rows, D=512": Pin("wide rows, D=512", _wide_rows),
    "subnormal row": Pin("subnormal row", _subnormal_row),
    "zero row": Pin(
        "zero row", _rows_case([[0.0] * 8, [1.0, -2.0, 3.0, 0.5, 0.25, -1.0, 2.0, 1.5]], ("zero", "normal"))
    ),
    "one huge outlier": Pin(
        "one huge outlier",
        lambda dt: _rows_case([[_fp16_safe(2.0**14, dt)] + [2.0**-6] * 6 + [-(2.0**-6)]], ("outlier",))(dt),
    ),
    "eps-dominated": Pin(
        "eps-dominated",
        _rows_case([[1e-4, -2e-4, 3e-4, 1e-4, -1e-4, 2e-4]], ("eps_dominated",), eps=1e-6, gamma="ones"),
    ),
    "fp16 |x| > 256": Pin("fp16 |x| > 256", _rows_case([[300.0, -512.0, 1000.0, 257.0]], ("large",), gamma="ones")),
    "gains 2^-8 … 2^4": Pin(
        "gains 2^-8 … 2^4",
        _rows_case([[1.0, -2.0, 3.0, 0.5, 0.25, -1.0, 2.0, 1.5]], ("normal",), gamma="tiny_and_large"),
    ),
    "constant row, mean 3": Pin(
        "constant row, mean 3", _rows_case([[3.0] * 5, [3.0, 3.5, 2.5, 3.0, 4.0]], ("constant", "mean_shifted"))
    ),
}


ROW_PINS = {"four wide rows, k=1": Pin("four wide rows, k=1", _wide_row_case)}


# ---------------------------------------------------------------------------------------------- SwiGLU


def _swiglu_pin(x: list[list[float]], F: int, kinds: tuple[str, ...]) -> Callable[[torch.dtype], SwiGLUCase]:
    def build(dtype: torch.dtype) -> SwiGLUCase:
        xt = torch.tensor(x, dtype=torch.float64).to(dtype)
        D = xt.shape[-1]
        wg, wu, wd = linear_weight(F, D, dtype, 1), linear_weight(F, D, dtype, 2), linear_weight(D, F, dtype, 3)
        return SwiGLUCase(xt, wg, wu, wd, 1.0, kinds)

    return build


SWIGLU_PINS = {
    "zero token": Pin("zero token", _swiglu_pin([[0.0] * 6, [1.0, -2.0, 0.5, 3.0, -0.25, 1.5]], 9, ("zero", "normal"))),
    "large negative gate": Pin("large negative gate", _swiglu_pin([[-30.0, -20.0, 40.0, -50.0]], 5, ("large",))),
}


# ---------------------------------------------------------------------------------------------- Block


def _gqa_block(dtype: torch.dtype) -> BlockCase:
    """H = 4 query heads on G = 2 kv heads (1 < G < H: h // (H/G) ≠ h mod G for h = 1, 2), T = 4, sharp logits."""
    config = fixed_config(H=4, G=2, K=4, F=24)
    x = torch.from_numpy(np.random.default_rng(7).standard_normal((1, 4, config.dim))).to(dtype)
    return BlockCase(config, x, block_params(config, dtype, seed=11, scale=1.0, logit_scale=4.0), 1.0, 4.0)


BLOCK_PINS = {
    "GQA H=4 G=2": Pin("GQA H=4 G=2", _gqa_block),
}


SHARP_BLOCK_PINS = {
    "GQA H=4 G=2": Pin("GQA H=4 G=2", lambda dt: SharpBlockCase(_gqa_block(dt), ("normal",) * 4)),  # x ~ N(0, 1)
}


# ---------------------------------------------------------------------------------------------- long sequences

LONG_T = 1024  # the stored corpus checks RoPE against golden at T = 1024 (golden/data/block.json); the laws here
# reach it with bitwise / non-finite criteria that need no golden value


def long_block_case(dtype: torch.dtype, T: int = LONG_T) -> BlockCase:
    """A Block case at a long sequence: H = 2 query heads on G = 1 kv head, K = 8, F = 32, T tokens, seeded
    (narrow on purpose: the attention matrix grows as H·T²)."""
    config = fixed_config(H=2, G=1, K=8, F=32, max_seq_len=T)
    x = torch.from_numpy(np.random.default_rng(T).standard_normal((1, T, config.dim))).to(dtype)
    return BlockCase(config, x, block_params(config, dtype, seed=T + 1), 1.0, 1.0)


def _long_causal(dtype: torch.dtype) -> CausalCase:
    case = long_block_case(dtype)
    t = 700  # past every power-of-two block boundary up to 512
    other = case.x.clone()
    other[:, t:] = torch.from_numpy(np.random.default_rng(3).standard_normal(other[:, t:].shape)).to(dtype)
    return CausalCase(case, t, other)


CAUSAL_PINS = {"T=1024, t=700": Pin("T=1024, t=700", _long_causal)}


# ---------------------------------------------------------------------------------------------- many rows

MANY_ROWS = 160  # 2½ row blocks of 64: a reduction over rows that stops after a block, or drops a partial one, shows


def _many_rows_rmsnorm(dtype: torch.dtype) -> GradCase:
    rng = np.random.default_rng(MANY_ROWS)
    D = 16
    x = torch.from_numpy(rng.standard_normal((2, MANY_ROWS // 2, D)) + 0.5).to(dtype)
    w = torch.from_numpy(rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)).to(dtype)
    case = RMSNormCase(x, w, 1e-6, ("mean_shifted",) * MANY_ROWS, "random_signed")
    return GradCase(case, cotangent(tuple(x.shape), dtype, MANY_ROWS))


def _many_rows_swiglu(dtype: torch.dtype) -> GradCase:
    D, F = 16, 40
    x = torch.from_numpy(np.random.default_rng(MANY_ROWS).standard_normal((MANY_ROWS, D))).to(dtype)
    w = [linear_weight(o, i, dtype, MANY_ROWS + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
    case = SwiGLUCase(x, *w, 1.0, ("normal",) * MANY_ROWS)
    return GradCase(case, cotangent(tuple(x.shape), dtype, MANY_ROWS))


GRAD_PINS = {
    "RMSNorm, 160 rows": Pin("RMSNorm, 160 rows", _many_rows_rmsnorm),
    "SwiGLU, 160 rows": Pin("SwiGLU, 160 rows", _many_rows_swiglu),
}


# ---------------------------------------------------------------------------------------------- model sizes

MODEL_WIDTHS = (2048, 4096, 5120, 8192, 16384)  # Llama-7B / Llama-13B / Llama-65B-class widths, beyond FAST_DIMS
MODEL_HIDDEN = 28672  # the FFN width of Llama-3-70B


def _wide_case(D: int) -> Callable[[torch.dtype], RMSNormCase]:
    """Three rows of width D: non-zero mean, all 0.7 (correlated rounding errors), one outlier; γ of both signs."""

    def build(dtype: torch.dtype) -> RMSNormCase:
        rng = np.random.default_rng(D)
        x = np.stack([rng.standard_normal(D) + 0.5, np.full(D, 0.7), rng.standard_normal(D) / 8])
        x[2, D // 3] = 3.5
        w = rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)
        t = torch.from_numpy
        return RMSNormCase(t(x).to(dtype), t(w).to(dtype), 1e-6, ("mean_shifted", "constant", "outlier"), "random")

    return build


def _wide_row_case_at(D: int) -> Callable[[torch.dtype], RowCase]:
    def build(dtype: torch.dtype) -> RowCase:
        case = _wide_case(D)(dtype)
        return RowCase(case, 0, case.x.flip(0).contiguous())

    return build


def _wide_swiglu_tokens(dtype: torch.dtype) -> TokenCase:
    """Three tokens of D = 16 through F = 28672 hidden units (seeded); token 1 kept, 0 and 2 redrawn.
    (D small on purpose: the regime is F; the bound's cost grows as D·F.)"""
    D, F = 16, MODEL_HIDDEN
    rng = np.random.default_rng(F)
    x = torch.from_numpy(rng.standard_normal((3, D))).to(dtype)
    w = [linear_weight(o, i, dtype, F + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
    other = torch.from_numpy(rng.standard_normal((3, D))).to(dtype)
    other[1] = x[1]
    return TokenCase(SwiGLUCase(x, *w, 1.0, ("normal",) * 3), 1, other)


WIDTH_PINS = {f"D={D}": Pin(f"D={D}, 3 rows", _wide_case(D)) for D in MODEL_WIDTHS}
WIDTH_ROW_PINS = {f"D={D}": Pin(f"D={D}, 3 rows, k=1", _wide_row_case_at(D)) for D in MODEL_WIDTHS}
HIDDEN_PINS = {f"F={MODEL_HIDDEN}": Pin(f"D=16, F={MODEL_HIDDEN}, 3 tokens", _wide_swiglu_tokens)}


# ---------------------------------------------------------------------------------------------- call protocols

# The cases the value laws run once under every call protocol (``protocols.honoured(…, pin=…)``): small (the pins
# run in every profile, once per protocol and dtype) with several rows, a non-zero mean and γ of both signs, so a
# protocol that hands the module stale state, another instance's weights or a wrong cotangent moves every value.


def _protocol_rmsnorm(dtype: torch.dtype) -> RMSNormCase:
    rng = np.random.default_rng(19)
    x = torch.from_numpy(rng.standard_normal((2, 3, 48)) + 0.5).to(dtype)
    w = torch.from_numpy(rng.uniform(0.5, 1.5, 48) * rng.choice((-1.0, 1.0), 48)).to(dtype)
    return RMSNormCase(x, w, 1e-6, ("mean_shifted",) * 6, "random_signed")


def _protocol_rmsnorm_grads(dtype: torch.dtype) -> GradCase:
    case = _protocol_rmsnorm(dtype)
    return GradCase(case, cotangent(tuple(case.x.shape), dtype, 20))


def _protocol_swiglu(dtype: torch.dtype) -> SwiGLUCase:
    D, F = 8, 12
    x = torch.from_numpy(np.random.default_rng(21).standard_normal((2, 3, D)) + 0.25).to(dtype)
    w = [linear_weight(o, i, dtype, 22 + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
    return SwiGLUCase(x, *w, 1.0, ("normal",) * 6)


def _protocol_swiglu_grads(dtype: torch.dtype) -> GradCase:
    case = _protocol_swiglu(dtype)
    return GradCase(case, cotangent(tuple(case.x.shape), dtype, 25))


def _protocol_block(dtype: torch.dtype) -> BlockCase:
    config = fixed_config(H=2, G=1, K=4, F=12)
    x = torch.from_numpy(np.random.default_rng(26).standard_normal((2, 3, config.dim)) + 0.25).to(dtype)
    return BlockCase(config, x, block_params(config, dtype, seed=27, scale=1.0, logit_scale=2.0), 1.0, 2.0)


# The call-protocol pins, one per component law that is honoured under every protocol (its forward, its gradients)
RMSNORM_PROTOCOL_PIN = Pin("RMSNorm (2, 3, 48), every protocol", _protocol_rmsnorm)
RMSNORM_PROTOCOL_GRAD_PIN = Pin("RMSNorm (2, 3, 48), every protocol", _protocol_rmsnorm_grads)
SWIGLU_PROTOCOL_PIN = Pin("SwiGLU (2, 3, 8), F=12, every protocol", _protocol_swiglu)
SWIGLU_PROTOCOL_GRAD_PIN = Pin("SwiGLU (2, 3, 8), F=12, every protocol", _protocol_swiglu_grads)
BLOCK_PROTOCOL_PIN = Pin("Block (2, 3, 8), H=2 G=1, every protocol", _protocol_block)


# ---------------------------------------------------------------------------------------------- extreme logits

EXTREME_LOGIT = 4096.0  # |q·k/√K|: exp overflows fp32 past 88.7, so a softmax that does not subtract the row max
# returns inf/inf = NaN (all positive) or 0/0 = NaN (all negative); the golden softmax is exact at any scale


def logit_block(dtype: torch.dtype, *, k3: float, seed: int, logit: float) -> BlockCase:
    """A Block whose attention logits are all ≈ the same huge value (they differ by < 2: the softmax is far from
    one-hot and far from exactly uniform). x_t = [1 … 1, ±1 … ±1] (the sign alternating with t; every row of RMS 1,
    γ = 1), so q and k read only the first half, constant in t; with rope_theta = 10⁶ the pair (3, 7) of K = 8
    barely rotates (≤ 10⁻⁴ rad over T = 4): q₃ = 64 and ``k3`` (the weight per input channel times D/2) give the
    score's bulk q₃k₃/√K; the pair (0, 4), which rotates by one radian per position, reads the alternating half:
    ±1.4, so the scores differ. v reads both halves. ``logit``, the logits' magnitude, is the case's ``logit_scale``."""
    config = dataclasses.replace(fixed_config(H=2, G=1, K=8, F=16), rope_theta=1e6)
    D, K = config.dim, config.head_dim
    params = block_params(config, dtype, seed=seed, gamma="ones")
    wq, wk = torch.zeros(config.n_heads * K, D), torch.zeros(K, D)
    half = D // 2
    for h in range(config.n_heads):
        wq[h * K + 3, :half] = 64.0 / half  # q₃ = 64
        wq[h * K + 0, half:] = 2.0 / half  # q₀ = ±2, alternating with t
    wk[3, :half] = k3 / half
    wk[0, half:] = 2.0 / half
    params = {**params, "attn.wq.weight": wq.to(dtype), "attn.wk.weight": wk.to(dtype)}
    T = 4
    x = torch.ones(2, T, D, dtype=torch.float64)
    x[:, 1::2, half:] = -1.0
    x[1] = x[1].flip(0)
    return BlockCase(config, x.to(dtype), params, 1.0, logit)


def _extreme_logits(sign: float) -> Callable[[torch.dtype], BlockCase]:
    """All attention logits ≈ sign·4096: k₃ = ±181, q₃k₃/√8 = ±4096.3 (:func:`logit_block`)."""
    return functools.partial(logit_block, k3=sign * 181.0, seed=41, logit=EXTREME_LOGIT)


LOGIT_PINS = {
    "logits ≈ −4096": Pin("every attention logit ≈ −4096", _extreme_logits(-1.0)),
    "logits ≈ +4096": Pin("every attention logit ≈ +4096", _extreme_logits(1.0)),
}


# ---------------------------------------------------------------------------------------------- 16-bit backward

BACKWARD_T = 513  # past 512: the attention backward over a realistic sequence, logits of realistic size


def _realistic_backward(dtype: torch.dtype) -> BlockCase:
    """T = 513 tokens, H = 2 on G = 1, K = 8, F = 32, q/k weights of scale 2.5: logits q·k/√K ~ N(0, 6²), the
    largest of each row ≈ 15–20 (a trained Llama's are of that order; exp(11.1) already overflows fp16)."""
    config = fixed_config(H=2, G=1, K=8, F=32, max_seq_len=BACKWARD_T)
    x = torch.from_numpy(np.random.default_rng(BACKWARD_T).standard_normal((1, BACKWARD_T, config.dim))).to(dtype)
    return BlockCase(config, x, block_params(config, dtype, seed=43, scale=0.5, logit_scale=2.5), 0.5, 2.5)


BACKWARD_PINS = {f"T={BACKWARD_T}": Pin(f"T = {BACKWARD_T}, logits up to ≈ 20", _realistic_backward)}


# ---------------------------------------------------------------------------------------------- AddRMSNorm


def _add_case(x: np.ndarray, r: np.ndarray, kinds: tuple[str, ...], branch: str, eps: float = 1e-6):
    def build(dtype: torch.dtype) -> AddRMSNormCase:
        xt, rt = (torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype) for v in (x, r))
        D = xt.shape[-1]
        w = torch.from_numpy(np.random.default_rng(D).uniform(0.5, 1.5, D) * np.where(np.arange(D) % 3, 1.0, -1.0))
        return AddRMSNormCase(xt, rt, w.to(dtype), eps, kinds, branch, "random_signed")

    return build


def _add_wide(dtype: torch.dtype, D: int = 1024) -> AddRMSNormCase:
    """Two full-mantissa rows: a small branch (std 2^-5) on a stream of mean 0.5, and x = −r + 2^-8 (cancelling)."""
    rng = np.random.default_rng(D)
    r = rng.standard_normal((2, D)) + 0.5
    x = np.stack([rng.standard_normal(D) / 32, -r[1] + rng.standard_normal(D) / 256])
    return _add_case(x, r, ("mean_shifted", "mean_shifted"), "small, cancelling")(dtype)


def _add_many_rows(dtype: torch.dtype) -> AddGradCase:
    rng = np.random.default_rng(MANY_ROWS)
    D = 16
    r, x = rng.standard_normal((2, MANY_ROWS // 2, D)) + 0.5, rng.standard_normal((2, MANY_ROWS // 2, D)) / 4
    case = _add_case(x, r, ("mean_shifted",) * MANY_ROWS, "comparable")(dtype)
    return AddGradCase(case, *(cotangent((2, MANY_ROWS // 2, D), dtype, MANY_ROWS + k) for k in range(2)))


def _add_protocols(dtype: torch.dtype) -> AddRMSNormCase:
    """The case the AddRMSNorm laws run under every call protocol: (2, 3, 48), a branch of a quarter of the stream."""
    rng = np.random.default_rng(27)
    r, x = rng.standard_normal((2, 3, 48)) + 0.5, rng.standard_normal((2, 3, 48)) / 4
    return _add_case(x, r, ("mean_shifted",) * 6, "comparable")(dtype)


def _add_protocols_grads(dtype: torch.dtype) -> AddGradCase:
    case = _add_protocols(dtype)
    return AddGradCase(case, *(cotangent(tuple(case.x.shape), dtype, 28 + k) for k in range(2)))


ADD_RMSNORM_PINS = {
    "every protocol": Pin("AddRMSNorm (2, 3, 48), every protocol", _add_protocols),
    "every protocol, gradients": Pin("AddRMSNorm (2, 3, 48), every protocol", _add_protocols_grads),
    "wide rows, D=1024": Pin("wide rows, D=1024", _add_wide),
    "wide rows, D=4096": Pin("wide rows, D=4096", lambda dtype: _add_wide(dtype, 4096)),
    "every corner": Pin(
        "every corner",
        lambda dtype: _add_case(
            [[a for a, _ in sum_corners(dtype)]], [[b for _, b in sum_corners(dtype)]], ("corners",), "corners"
        )(dtype),
    ),
    "zero branch": Pin(
        "zero branch",
        _add_case(
            np.zeros((2, 8)), [[1.0, -2.0, 3.0, 0.5, 0.25, -1.0, 2.0, 1.5], [0.0] * 8], ("normal", "zero"), "zero"
        ),
    ),
    "ties and signed zeros": Pin(  # 1 + 2^-8 and 1 + 3·2^-8 are bf16 ties; 2^-7 − 2^-7 = +0, −0 + −0 = −0
        "ties and signed zeros",
        _add_case(
            [[2.0**-8, 3 * 2.0**-8, 2.0**-7, -0.0, 1.0, -(2.0**-20)]],
            [[1.0, 1.0, -(2.0**-7), -0.0, 2.0**13, 1.0]],
            ("normal",),
            "small",
        ),
    ),
    "AddRMSNorm, 160 rows": Pin("AddRMSNorm, 160 rows", _add_many_rows),
}


# ---------------------------------------------------------------------------------------------- 80 rows

# The Block's parameter gradients on B·T = 80 rows (``block.GRAD_ROWS``).
PARAM_GRAD_PINS = {
    "GQA H=4 G=2, 80 rows": Pin(
        "GQA H=4 G=2, 80 rows", lambda dt: param_grad_case(fixed_config(4, 2, 4, 24, GRAD_ROWS[1]), dt, 3)
    )
}


# ---------------------------------------------------------------------------------------------- reach


def _long_reach(dtype: torch.dtype, j: int = 0) -> ReachCase:
    return ReachCase(one_token(long_block_case(dtype), j), j)


LONGEST_T = 4097  # past every chunk size a kernel uses: 512, 1024, 2048 and 4096


def _longest_reach(dtype: torch.dtype) -> ReachCase | None:
    """T = 4097, token 0 (one head, K = 8: the attention matrix alone is 4097² values) — in fp32 only (None
    elsewhere: the other dtypes reach T = 1024; 4097 costs a second per dtype)."""
    if dtype != torch.float32:
        return None
    config = fixed_config(H=1, G=1, K=8, F=8, max_seq_len=LONGEST_T)
    x = torch.from_numpy(np.random.default_rng(LONGEST_T).standard_normal((1, LONGEST_T, config.dim))).to(dtype)
    case = BlockCase(config, x, block_params(config, dtype, seed=LONGEST_T), 1.0, 1.0)
    return ReachCase(one_token(case, 0), 0)


REACH_PINS = {
    f"T={LONG_T}, j=0": Pin(f"T={LONG_T}, j=0", _long_reach),
    f"T={LONGEST_T}, j=0": Pin(f"T={LONGEST_T}, j=0 (fp32)", _longest_reach),
}


# ---------------------------------------------------------------------------------------------- overflow


def _at_the_threshold(dtype: torch.dtype) -> DomainCase:
    """Rows of 1e20 (fp32: F.rms_norm returns 0) next to rows just inside the threshold, D = 64."""
    D = 64
    ks = [-1, -8, 1, 8] if reaches_threshold(D, dtype) else [-1, -8, -3, -4]
    x = rows_at_threshold(np.ones((len(ks), D)), ks, dtype)
    if dtype in (torch.float32, torch.bfloat16):
        x = np.vstack([x, np.full((1, D), 1e20)])
        ks = [*ks, int(np.log2(D * 1e40 / overflow_threshold(D, dtype)))]
    w = torch.linspace(-1.5, 1.75, D, dtype=torch.float64).to(dtype)
    return DomainCase(RMSNormCase(torch.from_numpy(x).to(dtype), w, 1e-6, ("large",) * len(ks), "signed"), tuple(ks))


DOMAIN_PINS = {"equal rows at the threshold, 1e20": Pin("equal rows at the threshold, 1e20", _at_the_threshold)}
