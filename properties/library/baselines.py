"""The same-dtype baselines of the Block's derivative laws (``bounds.block_vjp``): the reference computed several ways.

flash-attention's tests judge a kernel's error against twice the error of the reference computed in the same dtype.
One reference's error is one draw of a correct implementation's, and one algorithm's: where the derivative is
ill-conditioned another correct computation errs far more than the reference happens to (measured, fp32, nearly
constant rows with q/k scale 8, κ ≈ 6·10³: the reference's orders err 1–2.4·10⁻⁴, SDPA's backward 1.8·10⁻², the
flash-attention formulation dS = P∘(dP − rowsum(dO∘O)) cancelling where attention is sharp). So the baseline is
the largest error over ``MEMBERS``: the reference as written; the reference under three other orders of its
reductions, got by permuting the axes the Block's function does not depend on the order of — D (every norm and
projection input), F (the FFN's hidden units), the value channels of every head (W_o's sum) — the results mapped
back; the Block of ``properties.adapters.torch_ref`` (F.rms_norm, SDPA: the flash-attention backward); and
:class:`RoundedBlock`, the accepted conventions that round the most to t (``bounds``' (b) and (c), HF eager's), in
two orders. The reference rounds once per sub-layer; a convention that rounds a norm's x·r, the RoPE tables and
products, the probabilities and p·v to t moves the derivative by far more than a reduction order does (measured,
HF-Llama in bf16: up to 7× the reference's error where the other members err alike).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

import nanolm_core
from nanolm_core._checks import upcast_dtype
from nanolm_core.attention import apply_rope
from properties.adapters import torch_ref
from properties.numerics import bounds

__all__ = ["CLASSES", "MEMBERS", "RoundedBlock", "baseline_dtype", "block_grads"]


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


MEMBERS: tuple[tuple[type, int], ...] = (
    *((nanolm_core.Block, k) for k in range(4)),
    (torch_ref.Block, 0),
    *((RoundedBlock, k) for k in range(2)),
)
CLASSES: tuple[type, ...] = tuple(dict.fromkeys(cls for cls, _ in MEMBERS))  # one each, in the given order
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
    members: int = len(MEMBERS),
) -> list[dict[str, np.ndarray]]:
    """Per member of ``MEMBERS[:members]``, {"x": vᵀ∂out/∂x, name: vᵀ∂out/∂name …} of that Block (on the CPU, as
    float64 arrays), computed in ``dtype`` (a law passes :func:`baseline_dtype`)."""
    rows = (None,) * (x.dim() - 1) + ("D",)
    out = []
    for cls, k in MEMBERS[:members]:
        maps = _order(config, k)
        block = cls(config).to(dtype)
        state = {n: _permuted(t.detach().to("cpu", dtype), _AXES[n], maps) for n, t in params.items()}
        block.load_state_dict(state, strict=True)
        xx = _permuted(x.detach().to("cpu", dtype), rows, maps).requires_grad_(True)
        weights = dict(block.named_parameters())
        wrt = [xx, *(weights[n] for n in names)]
        grads = torch.autograd.grad(block(xx), wrt, _permuted(v.detach().to("cpu", dtype), rows, maps))
        axes = [rows, *map(_AXES.get, names)]
        out.append({n: _back(g, a, maps) for n, g, a in zip(["x", *names], grads, axes, strict=True)})
    return out
