"""Value regimes of the generic axes: the magnitudes real models reach, and the call contexts laws walk.

**Massive activations.** Trained LLMs carry a few feature channels whose activations are hundreds to thousands of
times the rest, in fixed channels of every token's residual stream (Sun et al., "Massive Activations in Large
Language Models", 2024; the outlier features of Dettmers et al., LLM.int8(), 2022), and q/k projections large enough
that models without QK-norm see attention logits near −10⁵ where a query anti-aligns with every key.
:func:`massive_inputs` puts such channels into any component's inputs (generic over the records: the same channels
of every input and every row set to ±(1 + k/4)·2^e, e ∈ [7, 13], the first at 2^13: exact in every dtype);
:data:`MAGNITUDE_PINS` are the Block's logits of −10⁵ (−2·10⁴ in fp16, whose range ends at 65504).

**Call contexts.** :func:`call_contexts` is the list a context law walks in every example: each setting of
``contexts.CallContext`` alone, then all of them at once (autocast only for fp32 inputs: CPU autocast casts fp32 to
bf16 and leaves the other dtypes alone).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from hypothesis import strategies as st

from properties.library import strategies as S
from properties.library.contexts import PLAIN, CallContext

__all__ = [
    "MAGNITUDE_PINS",
    "MASSIVE_EXPONENTS",
    "MASSIVE_LOGIT",
    "SEVERAL_THREADS",
    "Massive",
    "call_contexts",
    "massive_inputs",
    "massive_logits",
]

MASSIVE_EXPONENTS = (7, 13)  # the massive channels hold ±(1 + k/4)·2^e: 128 … 14336
SEVERAL_THREADS = 3  # more than one intra-op thread, and an odd count: a work split by thread count has a remainder


def call_contexts(dtype: torch.dtype) -> tuple[CallContext, ...]:
    """The contexts a context law calls under, plain first: threads, deterministic mode, the grad modes, autocast
    (fp32 only), and every setting together."""
    autocast = "bf16" if dtype == torch.float32 else None
    alone = [
        CallContext(threads=SEVERAL_THREADS),
        CallContext(deterministic=True),
        CallContext(grad="enabled"),
        CallContext(grad="inference"),
    ]
    if autocast is not None:
        alone.append(CallContext(autocast=autocast))
    together = CallContext(autocast=autocast, deterministic=True, threads=SEVERAL_THREADS, grad="enabled")
    return (PLAIN, *alone, together)


@dataclasses.dataclass(frozen=True)
class Massive:
    """Which channels are massive and their magnitudes (for messages)."""

    channels: tuple[int, ...]
    magnitudes: tuple[float, ...]

    def describe(self) -> dict[str, object]:
        return {"massive channels": list(self.channels), "massive magnitudes": list(self.magnitudes)}


def _massive(t: torch.Tensor, channels: tuple[int, ...], magnitudes: tuple[float, ...]) -> torch.Tensor:
    """t with each of its ``channels`` (last dim) set to ±magnitude (the drawn value's sign; + for a zero), in every
    row: massive activations sit in fixed channels at nearly the same value in every token."""
    out = t.detach().clone()
    for c, m in zip(channels, magnitudes, strict=True):
        sign = torch.where(out[..., c] < 0, -1.0, 1.0).to(out.dtype)
        out[..., c] = sign * m
    return out


@st.composite
def massive_inputs(draw: st.DrawFn, inputs: tuple[torch.Tensor, ...]) -> tuple[tuple[torch.Tensor, ...], Massive]:
    """The same inputs with 1–3 channels (the same in every input and row) massive: the first at the largest
    magnitude real models reach, (1 + k/4)·2^13, the others (1 + k/4)·2^e, e ∈ MASSIVE_EXPONENTS (exact in every
    dtype, below fp16's overflow). Returns the new inputs and what was done."""
    D = inputs[0].shape[-1]
    n = draw(st.integers(1, min(3, D)), label="massive channel count")
    channels = tuple(draw(st.lists(st.integers(0, D - 1), min_size=n, max_size=n, unique=True), label="channels"))
    lo, hi = MASSIVE_EXPONENTS
    exponents = [hi, *(draw(st.integers(lo, hi), label="massive exponent") for _ in channels[1:])]
    magnitudes = tuple((1 + draw(st.integers(0, 3), label="massive mantissa") / 4) * 2.0**e for e in exponents)
    return tuple(_massive(t, channels, magnitudes) for t in inputs), Massive(channels, magnitudes)


# ---------------------------------------------------------------------------------------------- the Block's logits
MASSIVE_LOGIT = 1e5  # |q·k/√K| of a model without QK-norm (2·10⁴ in fp16: q·k itself must stay below 65504)


def massive_logits(dtype: torch.dtype) -> S.BlockCase:
    """Every attention logit ≈ −10⁵ (−2·10⁴ in fp16), the logits of a row differing by < 3: the softmax is far from
    one-hot, and far below any finite "−10⁴" a kernel may start its running max at. As ``strategies``' extreme-logit
    pins: x_t = [1 … 1, ±1 … ±1] (the sign alternating with t; RMS 1, γ = 1), q and k read the first half (q₃ = 64,
    k₃ = −L·√K/64) with rope_theta = 10⁶ (the pair (3, 7) barely rotates over T = 4), the pair (0, 4) reads the
    alternating half and rotates (±1.4: the logits differ); v reads both halves."""
    logit = MASSIVE_LOGIT if dtype != torch.float16 else 2e4
    return S.logit_block(dtype, k3=-logit * math.sqrt(8) / 64.0, seed=47, logit=logit)  # K = 8: q₃k₃/√K = −logit


MAGNITUDE_PINS = {"logits ≈ −10⁵": S.Pin("every attention logit ≈ −10⁵ (no QK-norm)", massive_logits)}
