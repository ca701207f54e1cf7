"""The same-dtype baselines of the Block's derivative laws (``bounds.block_vjp``): the reference computed several ways.

flash-attention's tests judge a kernel's error against twice the error of the reference computed in the same dtype.
One reference's error is one draw of a correct implementation's, and one algorithm's: where the derivative is
ill-conditioned another correct computation errs far more than the reference happens to (measured, fp32, nearly
constant rows with q/k scale 8, κ ≈ 6·10³: the reference's orders err 1–2.4·10⁻⁴, SDPA's backward 1.8·10⁻², the
flash-attention formulation dS = P∘(dP − rowsum(dO∘O)) cancelling where attention is sharp). So the baseline is
the largest error over ``MEMBERS``: the reference as written; the reference under three other orders of its
reductions, got by permuting the axes the Block's function does not depend on the order of — D (every norm and
projection input), F (the FFN's hidden units), the value channels of every head (W_o's sum) — the results mapped
back; the Block of ``properties.adapters.torch_ref`` (F.rms_norm, SDPA: the flash-attention backward);
:class:`RoundedBlock`, the accepted conventions that round the most to t (``bounds``' (b) and (c), HF eager's), in
two orders; :class:`FusedBlock`, q, k, v and gate, up each from one fused projection; every other pair of the
attention's conventions (``PAIRS``: RoPE kept in c, rounded to t or computed in t × an eager, eager-rounding or SDPA
kernel); :class:`RandomlyRoundedBlock` in four orders, each sub-layer's
result rounded to t at random; and :class:`RowOrderedBlock` in two, the norms' weight gradients summed along the
rows one row at a time. The reference rounds once per sub-layer; a convention that rounds a norm's x·r,
the RoPE tables and products, the probabilities and p·v to t moves the derivative by far more than a reduction
order does (measured, HF-Llama in bf16: up to 7× the reference's error where the other members err alike); and
where the derivative is ill-conditioned, *which* neighbour in t each intermediate lands on decides it (measured:
F.rms_norm + SDPA with its RoPE in bf16 erred 2.4× the error of every fixed convention but its own attention pair
on a row of scale 2⁻⁷ under sharp attention; the random members err from 0.1× to 0.9× of it there, the pairs with
RoPE in t 0.95× and 1×); and where the branches' contributions to ∂x cancel, so does the order of their sum (HF's
Phi-3, fused projections, erred 12× every other member's largest error on a stack of four blocks in fp32 —
tests/numerics/test_baselines.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

import nanolm_core
from nanolm_core._checks import upcast_dtype
from nanolm_core.attention import apply_rope
from nanolm_core.modules import rms_norm
from properties.adapters import torch_ref
from properties.numerics import bounds

__all__ = [
    "MEMBERS",
    "PAIRS",
    "STACK_MEMBERS",
    "FusedBlock",
    "RandomlyRoundedBlock",
    "RoundedBlock",
    "RowOrderedBlock",
    "baseline_dtype",
    "block_grads",
    "members_for",
    "round_randomly",
]


class _RoundedNorm(nanolm_core.RMSNorm):
    """Convention (b): x_c·r rounded to t, then ·w in t (two roundings)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.to(upcast_dtype(x.dtype))
        return self.weight.to(x.dtype) * (xc * torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class _RoundedAttention(nanolm_core.Attention):
    """Convention (c), HF's eager attention: the RoPE tables rounded to t and the rotation, the scores and p·v in t;
    the softmax in c, its probabilities rounded to t."""

    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        return apply_rope(x, cos.to(x.dtype), sin.to(x.dtype))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = self.expand_kv(k), self.expand_kv(v)
        probs = torch.softmax(self.mask(self.scores(q, k)), dim=-1, dtype=upcast_dtype(q.dtype))
        return probs.to(q.dtype) @ v


class RoundedBlock(nanolm_core.Block):
    """The Block in the accepted conventions that round the most to t: (b)'s norm, (c)'s attention and SwiGLU."""

    norm_cls, attn_cls, ffn_cls = _RoundedNorm, _RoundedAttention, torch_ref.SwiGLU


class _FusedAttention(nanolm_core.Attention):
    """q, k, v from one projection by cat(W_q, W_k, W_v) (gpt-fast's wqkv, Phi-3's qkv_proj, vLLM's
    QKVParallelLinear): the backward's ∂x is one product over H·K + 2·G·K channels, not three products summed."""

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        B, T, _ = x.shape
        H, G, K = self.config.n_heads, self.config.n_kv_heads, self.config.head_dim
        qkv = F.linear(x, torch.cat([self.wq.weight, self.wk.weight, self.wv.weight]))
        q, k, v = qkv.split([H * K, G * K, G * K], dim=-1)
        return tuple(t.reshape(B, T, -1, K).transpose(1, 2) for t in (q, k, v))  # type: ignore[return-value]


class _FusedSwiGLU(nanolm_core.SwiGLU):
    """gate and up from one projection by cat(W_gate, W_up) (Phi-3's gate_up_proj, vLLM's
    MergedColumnParallelLinear): the backward's ∂x is one product over 2F channels."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, torch.cat([self.w_gate.weight, self.w_up.weight])).chunk(2, dim=-1)
        return self.w_down(F.silu(gate) * up)


class FusedBlock(nanolm_core.Block):
    """The reference Block with fused projections (:class:`_FusedAttention`, :class:`_FusedSwiGLU`): where the
    branches' contributions to ∂x cancel, the order of that one sum decides it (measured, fp32, 4 stacked blocks:
    the depth ratio of the reference errs 0.2·u·ratio, HF's Phi-3 18.7, this member 18.2, every other member ≤ 7.6)."""

    attn_cls, ffn_cls = _FusedAttention, _FusedSwiGLU


# The attention's two stages each have accepted conventions, and on sharp attention their combination decides the
# derivative (measured, bf16, q/k scale 8: RoPE in t alone errs 3.2 roundings at the derivative's scale, SDPA alone
# 1.3, the two together 14.7 — F.rms_norm + SDPA with HF's RoPE, `tests/correct_impls/frms_norm`). So the
# baselines take every pair: where q and k leave RoPE × the kernel that attends.
ROPES = {
    "c": nanolm_core.Attention.rope,  # computed in c and kept there (the reference)
    "c, rounded to t": lambda self, x, cos, sin: apply_rope(x.to(cos.dtype), cos, sin).to(x.dtype),  # torch_ref
    "t": _RoundedAttention.rope,  # the tables rounded to t, the rotation in t (HF)
}


def _sdpa(self: nanolm_core.Attention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` in q's dtype (v cast to it: after RoPE in c, q and k are c)."""
    return torch_ref.Attention.attend(self, q, k, v.to(q.dtype))


ATTENDS = {
    "eager": nanolm_core.Attention.attend,  # scores, softmax and p·v in q's dtype (the reference)
    "eager, probabilities in t": _RoundedAttention.attend,  # HF's eager attention
    "SDPA": _sdpa,  # the flash-attention backward: dS = P∘(dP − rowsum(dO∘O))
}


def _attention_pair(rope: str, attend: str) -> type:
    return type(f"Attention[{rope} | {attend}]", (nanolm_core.Attention,), {"rope": ROPES[rope],
                "attend": ATTENDS[attend], "__doc__": f"RoPE: {rope}; attend: {attend}."})  # fmt: skip


def _pair_block(rope: str, attend: str) -> type:
    return type(f"Block[{rope} | {attend}]", (nanolm_core.Block,), {"attn_cls": _attention_pair(rope, attend),
                "__doc__": f"The reference Block with the attention's RoPE {rope} and kernel {attend}."})  # fmt: skip


# the pairs no other member computes: the reference is (c, eager) — (c, eager with probabilities in t) is the same
# computation, its probabilities already in c —, torch_ref (c rounded to t, SDPA), RoundedBlock (t, HF eager)
PAIRS: tuple[type, ...] = tuple(
    _pair_block(r, a)
    for r, a in (("c", "SDPA"), ("c, rounded to t", "eager"), ("c, rounded to t", "eager, probabilities in t"),
                 ("t", "eager"), ("t", "SDPA"))
)  # fmt: skip


# Stochastic rounding from c to t by the bits c's value has beyond t's precision (c, its same-width integer, their
# number): the low bits plus a uniform integer below 2^bits, then cut — rounds up with probability equal to the
# fraction of an ulp left out (sign–magnitude: the same for negative values).
_RANDOM_BITS = {
    torch.bfloat16: (torch.float32, torch.int32, 16),
    torch.float16: (torch.float32, torch.int32, 13),
    torch.float32: (torch.float64, torch.int64, 29),
}


def round_randomly(x: torch.Tensor, t: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """``x`` (computed in c) rounded to ``t`` down or up at random, up with probability the fraction of an ulp of t
    left out (stochastic rounding): one of the two results a computation along another path may give where the
    reference rounds to nearest. The gradient passes as through a cast. fp64 (no wider c): rounded to nearest."""
    if t not in _RANDOM_BITS or x.dtype == t:
        return x.to(t)
    c, i, bits = _RANDOM_BITS[t]
    xc = x.detach().to(c)
    noise = torch.randint(0, 2**bits, xc.shape, generator=gen, dtype=i)
    r = ((xc.view(i) + noise) & ~(2**bits - 1)).view(c).to(t)  # exact in t: its bits beyond t are zero
    r = torch.where(torch.isfinite(xc), r, xc.to(t))
    nearest = x.to(t)
    return nearest + (r - nearest.detach())  # the value r, the gradient of the cast


def _wide(t: torch.dtype) -> torch.dtype:
    """The dtype the randomly rounded members compute in: wider than t where t can be rounded to (fp32 for 16-bit
    t, fp64 for fp32: a correct implementation may compute in more precision and round once), else t."""
    return _RANDOM_BITS[t][0] if t in _RANDOM_BITS else t


class _RandomNorm(nanolm_core.RMSNorm):
    """The norm in c (:func:`_wide`), its output rounded to t at random (``gen``: the member's generator)."""

    gen: torch.Generator

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return round_randomly(rms_norm(x.to(_wide(x.dtype)), self.weight, self.eps), x.dtype, self.gen)


class _RandomAttention(nanolm_core.Attention):
    """RoPE, the scores, the softmax and p·v in c; q and k after RoPE, the probabilities and p·v rounded to t at
    random (the places where SDPA, flash attention and HF's eager attention round to t and the reference does not)."""

    gen: torch.Generator

    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        c = _wide(x.dtype)
        return round_randomly(super().rope(x, cos.to(c), sin.to(c)), x.dtype, self.gen)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        c = _wide(q.dtype)
        k, v = self.expand_kv(k), self.expand_kv(v)
        probs = round_randomly(torch.softmax(self.mask(self.scores(q.to(c), k.to(c))), dim=-1), q.dtype, self.gen)
        return round_randomly(probs.to(c) @ v.to(c), q.dtype, self.gen)


class _RandomSwiGLU(nanolm_core.SwiGLU):
    """The projections in t; silu(g) and the product computed in c and rounded to t at random."""

    gen: torch.Generator

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = _wide(x.dtype)
        gate, up = self.w_gate(x), self.w_up(x)
        s = round_randomly(F.silu(gate.to(c)), x.dtype, self.gen)
        return self.w_down(round_randomly(s.to(c) * up.to(c), x.dtype, self.gen))


class RandomlyRoundedBlock(nanolm_core.Block):
    """The Block with every sub-layer's result rounded to t at random (:func:`round_randomly`): where a derivative
    is ill-conditioned (sharp attention on a row of tiny scale: r ≫ 1), which of its two neighbours in t each
    intermediate lands on moves the derivative by more than a reduction order or a fixed convention does —
    measured, F.rms_norm + SDPA with its RoPE in bf16 erred 2.4× the other members' largest error. Members of this
    class draw that choice: member k rounds with a generator seeded k."""

    norm_cls, attn_cls, ffn_cls = _RandomNorm, _RandomAttention, _RandomSwiGLU

    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__(config)
        self.seeded(0)

    def seeded(self, seed: int) -> RandomlyRoundedBlock:
        gen = torch.Generator().manual_seed(seed)
        for module in self.modules():
            module.gen = gen
        return self


class _RowSum(torch.autograd.Function):
    """0 in the forward (shaped as ``like``); in the backward, the gradient of a norm's weight ``w``, Σ_rows dy ⊙ a,
    summed over the rows one at a time (first to last, or last to first) in a's dtype c and rounded to w's."""

    @staticmethod
    def forward(ctx: Any, w: torch.Tensor, a: torch.Tensor, like: torch.Tensor, reverse: bool) -> torch.Tensor:
        ctx.save_for_backward(a)
        ctx.reverse, ctx.wdtype = reverse, w.dtype
        return torch.zeros_like(like)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (a,) = ctx.saved_tensors
        terms = (dy.to(a.dtype) * a).reshape(-1, a.shape[-1])
        acc = torch.zeros_like(terms[0])
        for r in reversed(range(len(terms))) if ctx.reverse else range(len(terms)):
            acc = acc + terms[r]
        return acc.to(ctx.wdtype), None, None, None


class _RowOrderedNorm(nanolm_core.RMSNorm):
    """The reference's norm, its weight's gradient summed over the rows one at a time (:class:`_RowSum`)."""

    reverse = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.to(upcast_dtype(x.dtype))
        normed = xc * torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + self.eps)  # rms_norm's x·r, as it rounds
        y = (normed * self.weight.detach().to(xc.dtype)).to(x.dtype)  # and its output, from that x·r
        return y + _RowSum.apply(self.weight, normed.detach(), y, self.reverse)


class RowOrderedBlock(nanolm_core.Block):
    """The reference Block with its norms' weight gradients summed over the B·T rows one row at a time: member 0
    first to last, member 1 last to first. The other members take that sum as torch's reduction does (a cascade
    of vector lanes); a kernel that writes its own reduction may run along the rows — torch.compile's inductor
    does (measured: its ∂/∂ffn_norm.weight is this member's bit for bit, fp32, 80 rows, 6.1 u where every other
    member erred ≤ 1.9 u) — and a sequential sum of n terms errs ~√n times a cascade's. ∂x and the projections'
    gradients are the reference's (those are GEMMs, whose order along the rows is the library's)."""

    norm_cls = _RowOrderedNorm

    def ordered(self, k: int) -> RowOrderedBlock:
        for module in self.modules():
            if isinstance(module, _RowOrderedNorm):
                module.reverse = bool(k % 2)
        return self


MEMBERS: tuple[tuple[type, int], ...] = (
    *((nanolm_core.Block, k) for k in range(4)),
    (torch_ref.Block, 0),
    *((RoundedBlock, k) for k in range(2)),
    (FusedBlock, 0),
    *((cls, 0) for cls in PAIRS),
    *((RandomlyRoundedBlock, k) for k in range(4)),
    *((RowOrderedBlock, k) for k in range(2)),
)


def members_for(names: Sequence[str]) -> tuple[tuple[type, int], ...]:
    """The members whose derivatives with respect to x and ``names`` can differ from one another: the row-ordered
    ones only where a norm's weight is among ``names`` (elsewhere they compute the reference's)."""
    norms = any(n.endswith("norm.weight") for n in names)
    return tuple((cls, k) for cls, k in MEMBERS if norms or cls is not RowOrderedBlock)


# The members without their reduction orders (for stacks of blocks, which the orders' permutations do not reach):
# every class of those that can differ in ∂x once, the randomly rounded one under each of its seeds.
STACK_MEMBERS: tuple[tuple[type, int], ...] = tuple(
    dict.fromkeys((cls, k if cls is RandomlyRoundedBlock else 0) for cls, k in members_for(()))
)
_AXES: dict[str, tuple[str | None, ...]] = {
    "attn_norm.weight": ("D",),
    "attn.wq.weight": (None, "D"),
    "attn.wk.weight": (None, "D"),
    "attn.wv.weight": ("V", "D"),
    "attn.wo.weight": ("D", "O"),
    "ffn_norm.weight": ("D",),
    "ffn.w_gate.weight": ("F", "D"),
    "ffn.w_up.weight": ("F", "D"),
    "ffn.w_down.weight": ("D", "F"),
}


def _order(config: nanolm_core.ModelConfig, k: int) -> dict[str, np.ndarray]:
    """Order k of the reference's reductions (0: as written): an index map per permuted axis."""
    rng = np.random.default_rng(k)
    K = config.dim // config.n_heads
    d, f, tau = (np.arange(n) if k == 0 else rng.permutation(n) for n in (config.dim, config.ffn_dim, K))
    heads = [(np.arange(n)[:, None] * K + tau).ravel() for n in (config.n_kv_heads, config.n_heads)]
    return {"D": d, "F": f, "V": heads[0], "O": heads[1]}


def _permuted(t: torch.Tensor, axes: Sequence[str | None], maps: Mapping[str, np.ndarray]) -> torch.Tensor:
    for dim, a in enumerate(axes):
        if a is not None:
            t = t.index_select(dim, torch.from_numpy(maps[a]))
    return t


def _back(g: torch.Tensor, axes: Sequence[str | None], maps: Mapping[str, np.ndarray]) -> np.ndarray:
    out = g.detach().double().cpu().numpy()
    for dim, a in enumerate(axes):
        if a is not None:
            out = np.take(out, np.argsort(maps[a]), dim)
    return out


def baseline_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the baselines of a law run in ``dtype`` compute in: ``dtype``, or the declared compute dtype
    (``bounds.compute_dtype``, in the law's declared context) where that is narrower (HF reads fp64 as fp32)."""
    narrow = bounds.compute_dtype(dtype)
    return narrow if torch.finfo(narrow).eps > torch.finfo(dtype).eps else dtype


def block_grads(
    config: nanolm_core.ModelConfig,
    params: Mapping[str, torch.Tensor],
    x: torch.Tensor,
    v: torch.Tensor,
    dtype: torch.dtype,
    names: Sequence[str] = (),
    members: int | None = None,
) -> list[dict[str, np.ndarray]]:
    """Per member of ``members_for(names)[:members]`` (all of them by default), {"x": vᵀ∂out/∂x, name: vᵀ∂out/∂name …}
    of that Block (on the CPU, as float64 arrays), computed in ``dtype`` (a law passes :func:`baseline_dtype`)."""
    rows = (None,) * (x.dim() - 1) + ("D",)
    out = []
    for cls, k in members_for(names)[:members]:
        maps = _order(config, k)
        block = cls(config).to(dtype)
        if isinstance(block, RandomlyRoundedBlock):
            block.seeded(k)
        if isinstance(block, RowOrderedBlock):
            block.ordered(k)
        state = {n: _permuted(t.detach().to("cpu", dtype), _AXES[n], maps) for n, t in params.items()}
        block.load_state_dict(state, strict=True)
        xx = _permuted(x.detach().to("cpu", dtype), rows, maps).requires_grad_(True)
        weights = dict(block.named_parameters())
        wrt = [xx, *(weights[n] for n in names)]
        grads = torch.autograd.grad(block(xx), wrt, _permuted(v.detach().to("cpu", dtype), rows, maps))
        axes = [rows, *map(_AXES.get, names)]
        out.append({n: _back(g, a, maps) for n, g, a in zip(["x", *names], grads, axes, strict=True)})
    return out
