"""Adapter ``torch-compile``: the reference modules with their arithmetic compiled by ``torch.compile`` (inductor).

Each module subclasses its ``nanolm_core`` counterpart (same parameters, same validation) and runs the reference's
maths — the same formulas and casts, the reference's RoPE seams (``rope_cos_sin``, ``apply_rope``) — through one
compiled function per component: inductor's generated C++ (CPU) or Triton (CUDA) code, not ATen's eager kernels.
What changes is the evaluation order: inductor fuses the norm into one kernel that sums x² in vector lanes, each
lane sequential over D/L terms (L = 8 or 16 on CPU; per-thread loops on CUDA), and fuses silu·up into one
pointwise kernel that rounds once. The suite's bounds admit every reduction order, so a correct compilation passes.

Compilation cost is bounded: the compiled functions take tensors and plain scalars (eps) with ``dynamic=True``;
parameters get dynamic shapes too, and without autograd sizes 1 are not specialised, so one graph serves every D,
F, N, T, eps and config of a dtype (with autograd, a few more: sizes 1 are specialised there). The graphs are shared
by every module instance and reused across examples, and inductor's on-disk cache makes a second process cheap.
These settings are patched around each call only; a recompile never falls back to eager silently (hitting the
raised recompile limit is an error). One process-wide setting: AOTAutograd's buffer donation is turned off at
the first compiled call that records a graph (see ``_allow_retained_graphs``), so gradcheck can retain graphs.

Backward: autograd through the compiled functions (AOTAutograd compiles the backward graph with inductor too); the
gradient laws and fp64 gradcheck run on it.

``CONVENTIONS`` follows the schema documented in ``properties/adapters/__init__.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch._functorch.config
import torch.fx.experimental._config
import torch.nn.functional as F

import nanolm_core
from nanolm_core._checks import check_features, check_same, check_sequence, upcast_dtype
from nanolm_core.attention import apply_rope, rope_cos_sin

__all__ = ["CONVENTIONS", "AddRMSNorm", "Attention", "Block", "RMSNorm", "SwiGLU", "compiled"]

CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = x · rsqrt(mean(x²) + eps) · w",
        "rounding": "one rounding: x·r·w computed in fp32 (fp64 for fp64) in one fused kernel, rounded once",
        "compute": "fp32 for fp16/bf16/fp32 input, fp64 for fp64 (the reference's)",
        "compute_dtype": {"fp64": "fp64", "fp32": "fp32", "fp16": "fp32", "bf16": "fp32"},
        "reduction": "blocked",
        "notes": "inductor: Σx² in vector lanes, each sequential over D/L, lanes combined at the end",
        "eps_default": 1e-6,
        "eps_placement": "inside the square root",
        "weight_offset": 0.0,
        "source": "torch.compile(dynamic=True) of the nanolm_core.RMSNorm maths (inductor)",
    },
    "AddRMSNorm": {
        "formula": "h = x + r; y = h · rsqrt(mean(h²) + eps) · w",
        "rounding": "one fused kernel; h rounded to the input dtype and read so by the norm (inductor keeps the "
        "reference's cast: measured bitwise equal to it on bf16/fp16 rows of D = 4096), y rounded once",
        "compute": "fp32 for fp16/bf16/fp32 input, fp64 for fp64 (the reference's)",
        "compute_dtype": {"fp64": "fp64", "fp32": "fp32", "fp16": "fp32", "bf16": "fp32"},
        "norm_input": "rounded",
        "reduction": "blocked",
        "source": "torch.compile(dynamic=True) of the nanolm_core.AddRMSNorm maths (inductor)",
    },
    "SwiGLU": {
        "formula": "y = W_down (silu(W_gate x) ⊙ W_up x)",
        "rounding": "GEMMs round to the module dtype; silu(g)·u fused in fp32 opmath, rounded once",
        "compute": "module dtype (matmuls accumulate in fp32 for 16-bit dtypes)",
        "compute_dtype": "input",
        "source": "torch.compile(dynamic=True) of the nanolm_core.SwiGLU maths (inductor; GEMMs as extern kernels)",
    },
    "Block": {
        "formula": "h = x + attn(attn_norm(x)); out = h + ffn(ffn_norm(h))",
        "rounding": "as the reference (projections in module dtype; RoPE, scores, softmax, p·v in fp32), fused",
        "compute": "module dtype, fp32 (fp64) for RoPE/softmax",
        "compute_dtype": "input",
        "attention": "the reference's causal GQA maths; RoPE application, scores, softmax and p·v compiled (no SDPA); "
        "projections ATen GEMMs, RoPE tables from nanolm_core.rope_cos_sin",
        "rope": "rotate-half, nanolm_core.attention.rope_cos_sin / apply_rope",
        "source": "torch.compile(dynamic=True) of the nanolm_core norm, attention and SwiGLU maths (inductor)",
    },
}

RECOMPILE_LIMIT = 512  # graphs per compiled function in one process: dtypes × grad mode × the input layouts the
# layout laws pass (transposed, expanded, offset, strided views guard on strides) — 64 was hit by one worker running
# every Block law; hitting the limit stays an error, never a silent fall-back to eager


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """nanolm_core.RMSNorm's maths: upcast to c, x·rsqrt(mean(x²) + eps)·w in c, one rounding to x.dtype."""
    c = upcast_dtype(x.dtype)
    xc = x.to(c)
    r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps)  # (N, 1)
    return (xc * r * weight.to(c)).to(x.dtype)


def _add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float):
    """nanolm_core.AddRMSNorm's maths: h = x + r in x.dtype, y = :func:`_rmsnorm` of h → (y, h)."""
    h = x + residual
    return _rmsnorm(h, weight, eps), h


def _swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """nanolm_core.SwiGLU's maths: W_down(silu(W_gate x) ⊙ W_up x) in the module dtype."""
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


def _attention_core(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """nanolm_core.Attention's maths after the projections: RoPE applied to q and k, causal softmax(q kᵀ/√K) (max
    subtracted), · v, in c. q, k, v: (B·H, T, K), k and v already reading kv head h // (H/G); cos, sin: (T, K) from
    the reference's ``rope_cos_sin``; returns (B·H, T, K)."""
    T, K = q.shape[-2], q.shape[-1]
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    scores = q @ k.transpose(-2, -1) / K**0.5  # (B·H, T, T)
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ v


@functools.cache
def compiled(name: str) -> Callable[..., Any]:
    """The compiled function of a component's maths ("rmsnorm", "add_rmsnorm", "swiglu", "attention"), built on first
    use.

    Settings patched around each call (never left behind): parameters have dynamic shapes; the (raised) recompile
    limit is an error, never a silent fall-back to eager; without autograd, sizes 1 are not specialised either
    (``backed_size_oblivious``, no duck sizing: one graph per dtype). With autograd they are (size-oblivious
    graphs mis-specialise strides in AOTAutograd's training graphs), and buffer donation is off (below).
    """
    fn = {"rmsnorm": _rmsnorm, "add_rmsnorm": _add_rmsnorm, "swiglu": _swiglu, "attention": _attention_core}[name]
    graph = torch.compile(fn, dynamic=True, fullgraph=True)

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        training = torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
        limits = torch._dynamo.config.patch(
            recompile_limit=RECOMPILE_LIMIT, fail_on_recompile_limit_hit=True, force_parameter_static_shapes=False
        )
        if training:
            _allow_retained_graphs()
            with limits:
                return graph(*args)
        with limits, torch.fx.experimental._config.patch(backed_size_oblivious=True, use_duck_shape=False):
            return graph(*args)

    return call


@functools.cache
def _allow_retained_graphs() -> None:
    """AOTAutograd donates saved buffers to the backward, which then refuses backward(retain_graph=True) — what
    gradcheck and repeated vector–Jacobian products do. The check runs when the backward runs, outside any call of
    ours, so buffer donation (a memory optimisation) is turned off for the process at the first compiled call that
    records a graph. This is the adapter's one process-wide setting."""
    torch._functorch.config.donated_buffer = False


class RMSNorm(nanolm_core.RMSNorm):
    """nanolm_core.RMSNorm, its arithmetic compiled: y = x · rsqrt(mean(x², −1) + eps) ⊙ w, one rounding."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        return compiled("rmsnorm")(x.reshape(-1, self.dim), self.weight, float(self.eps)).reshape(x.shape)


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """nanolm_core.AddRMSNorm, its arithmetic compiled: h = x + r, y = h · rsqrt(mean(h², −1) + eps) ⊙ w — inductor
    fuses the add and the norm into one kernel (what serving stacks write by hand)."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        # x and residual as given, not flattened: views of two leaves whose gradients are one tensor would share one
        # .grad buffer, and a second backward would accumulate into it twice (autograd, pytorch/pytorch#34082)
        return compiled("add_rmsnorm")(x, residual, self.weight, float(self.eps))


class SwiGLU(nanolm_core.SwiGLU):
    """nanolm_core.SwiGLU, its arithmetic compiled: y = W_down (silu(W_gate x) ⊙ W_up x), in the module dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        w = (self.w_gate.weight, self.w_up.weight, self.w_down.weight)
        return compiled("swiglu")(x.reshape(-1, self.dim), *w).reshape(x.shape)


class Attention(nanolm_core.Attention):
    """nanolm_core.Attention (causal GQA, rotate-half RoPE): the projections are ATen GEMMs (inductor calls the same
    extern kernels) and the RoPE tables the reference's; RoPE's application, scores, softmax and p·v are compiled."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        check_sequence(x, cfg.dim, cfg.max_seq_len, "Attention", self.wq.weight)
        B, T, _ = x.shape
        H, G, K, c = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, upcast_dtype(x.dtype)
        q = self.wq(x).view(B, T, H, K).transpose(1, 2).to(c)  # (B, H, T, K)
        k, v = (
            w(x).view(B, T, G, K).transpose(1, 2).to(c).repeat_interleave(H // G, dim=1) for w in (self.wk, self.wv)
        )
        flat = [t.reshape(B * H, T, K) for t in (q, k, v)]  # one batch axis: fewer size-1 specialisations
        cos, sin = rope_cos_sin(T, K, cfg.rope_theta, c, x.device)  # the reference's tables (T, K)
        heads = compiled("attention")(*flat, cos, sin).view(B, H, T, K).transpose(1, 2).reshape(B, T, -1)
        return self.wo(heads.to(x.dtype))  # (B, T, D)


class Block(nanolm_core.Block):
    """nanolm_core.Block (pre-norm, residuals in x.dtype) built from the compiled norm, attention and SwiGLU."""

    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__(config)
        self.attn_norm = RMSNorm(config.dim, config.norm_eps)
        self.attn = Attention(config)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)
        self.ffn = SwiGLU(config.dim, config.ffn_dim)
