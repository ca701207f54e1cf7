"""Adapter ``torchtune``: torchtune's building blocks wrapped to the contract (optional) — an interleaved RoPE.

- RMSNorm: ``torchtune.modules.RMSNorm`` (parameter ``scale`` ↔ ``weight``): ``F.rms_norm(x.float(), scale, eps)``
  rounded once to the input dtype — fp64 input is computed in fp32.
- SwiGLU: ``torchtune.modules.FeedForward`` (``w1`` / ``w3`` / ``w2`` ↔ ``w_gate`` / ``w_up`` / ``w_down``, SiLU).
- Block: ``TransformerSelfAttentionLayer`` of ``MultiHeadAttention`` (causal SDPA, GQA) with
  ``RotaryPositionalEmbeddings`` and the two norms. torchtune rotates *interleaved* pairs (2j, 2j + 1) (Meta's
  layout), the contract rotate-half pairs (j, j + K/2): the adapter hands torchtune W_q and W_k with each head's
  rows permuted (``kit.permute_rope``), which makes torchtune compute exactly the contract's attention (q·k is
  invariant under the same permutation of q and k; v and W_o are untouched). RoPE runs in fp32 (``x.float()``).

torchtune 0.6 imports torchao (``pip install 'nanolm-verify[torchtune]'`` pins a torchao it imports with).
Wherever torchtune cannot be imported, ``SKIP_REASON`` says why and every law is skipped with that reason.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import torch
from torch import nn

import nanolm_core
from nanolm_core import ModelConfig
from properties.adapters import call_with, hide
from properties.adapters.kit import library_params, permute_rope

__all__ = ["CONVENTIONS", "SKIP_REASON", "Attention", "Block", "RMSNorm", "SwiGLU", "skip_reason"]

MLP_NAMES = {"w1.weight": "w_gate.weight", "w3.weight": "w_up.weight", "w2.weight": "w_down.weight"}
CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = fl(x · rsqrt(mean(x²) + eps) · w)",
        "rounding": "one rounding: F.rms_norm on x.float() (fp32), then .to(x.dtype)",
        "compute": "fp32 for every input dtype — fp64 input is downcast (x.float())",
        "compute_dtype": "fp32",
        "roundings": 1,
        "eps_default": 1e-6,
        "eps_placement": "inside",
        "weight_offset": 0.0,
        "weight_mapping": "contract weight ↔ RMSNorm.scale",
        "source": "torchtune.modules.RMSNorm",
    },
    "SwiGLU": {
        "formula": "y = w2(silu(w1(x)) ⊙ w3(x))",
        "rounding": "module dtype: each linear, silu and the product round to the input dtype",
        "compute": "module dtype",
        "compute_dtype": "input",
        "weight_mapping": "w_gate ↔ w1, w_up ↔ w3, w_down ↔ w2",
        "source": "torchtune.modules.FeedForward",
    },
    "Block": {
        "formula": "h = x + attn(sa_norm(x)); out = h + mlp(mlp_norm(h))",
        "rounding": "projections and SDPA in the module dtype; RoPE in fp32 rounded to the module dtype",
        "compute": "module dtype; fp32 for RoPE and the norms (fp64 input too)",
        "compute_dtype": {"fp64": "fp32"},
        "rope_layout": "rotate-half",  # as the suite sees the adapter: it permutes W_q, W_k itself
        "rope": "interleaved pairs (2j, 2j+1), RotaryPositionalEmbeddings(base = rope_theta), fp32 cache; the adapter "
        "permutes W_q and W_k rows per head (kit.permute_rope) so the result is the contract's rotate-half attention",
        "attention": "MultiHeadAttention: F.scaled_dot_product_attention(is_causal=True), kv heads expanded",
        "weight_mapping": "attn_norm ↔ sa_norm.scale, attn.wq/wk ↔ attn.q_proj/k_proj (rows permuted), attn.wv ↔ "
        "v_proj, attn.wo ↔ output_proj, ffn_norm ↔ mlp_norm.scale, ffn.w_* ↔ mlp.w1/w3/w2",
        "source": "torchtune.modules.TransformerSelfAttentionLayer",
    },
}


def skip_reason() -> str | None:
    """Why torchtune cannot run here (None when it can)."""
    if importlib.util.find_spec("torchtune") is None:
        return "torchtune is not installed (pip install 'nanolm-verify[torchtune]')"
    try:
        importlib.import_module("torchtune.modules")
    except Exception as exc:  # e.g. a torchao it cannot import from
        return f"torchtune cannot be imported here ({type(exc).__name__}: {str(exc)[:120]})"
    return None


SKIP_REASON = skip_reason()


def _modules() -> Any:
    if SKIP_REASON is not None:
        raise RuntimeError(f"torchtune adapter unavailable: {SKIP_REASON}")
    return importlib.import_module("torchtune.modules")


def _linear(n_in: int, n_out: int) -> nn.Linear:
    return nn.Linear(n_in, n_out, bias=False)


class RMSNorm(nanolm_core.RMSNorm):
    """``torchtune.modules.RMSNorm`` on the contract's gain: fl(F.rms_norm(x.float(), w, eps))."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        tt = _modules()
        super().__init__(dim, eps)
        with torch.device("meta"):
            hide(self, "_tt", tt.RMSNorm(dim, eps=eps))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._tt, {"scale": self.weight}, x)


class SwiGLU(nanolm_core.SwiGLU):
    """``torchtune.modules.FeedForward`` (SiLU gate) on contract-named weights."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        tt = _modules()
        super().__init__(dim, hidden_dim)
        with torch.device("meta"):
            ffn = tt.FeedForward(
                gate_proj=_linear(dim, hidden_dim), down_proj=_linear(hidden_dim, dim), up_proj=_linear(dim, hidden_dim)
            )
            hide(self, "_tt", ffn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._tt, library_params(self, MLP_NAMES), x)


class Attention(nanolm_core.Attention):
    """``torchtune.modules.MultiHeadAttention`` (interleaved RoPE) on the contract's wq, wk (rows permuted), wv, wo."""

    def __init__(self, config: ModelConfig) -> None:
        tt = _modules()
        super().__init__(config)
        D, H, G, K = config.dim, config.n_heads, config.n_kv_heads, config.head_dim
        hide(self, "_rope", tt.RotaryPositionalEmbeddings(K, max_seq_len=config.max_seq_len, base=config.rope_theta))
        with torch.device("meta"):
            mha = tt.MultiHeadAttention(
                embed_dim=D, num_heads=H, num_kv_heads=G, head_dim=K, q_proj=_linear(D, H * K),
                k_proj=_linear(D, G * K), v_proj=_linear(D, G * K), output_proj=_linear(H * K, D),
                pos_embeddings=tt.RotaryPositionalEmbeddings(K, max_seq_len=config.max_seq_len, base=config.rope_theta),
                max_seq_len=config.max_seq_len, is_causal=True,
            )  # fmt: skip
            hide(self, "_tt", mha)

    def tt_params(self, prefix: str, x: torch.Tensor) -> dict[str, torch.Tensor]:
        cfg = self.config
        return {
            f"{prefix}q_proj.weight": permute_rope(self.wq.weight, cfg.n_heads, to="interleaved"),
            f"{prefix}k_proj.weight": permute_rope(self.wk.weight, cfg.n_kv_heads, to="interleaved"),
            f"{prefix}v_proj.weight": self.wv.weight,
            f"{prefix}output_proj.weight": self.wo.weight,
            **{f"{prefix}pos_embeddings.{n}": b.to(x.device) for n, b in self._rope.named_buffers()},
        }

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._tt, self.tt_params("", x), x, x)


class Block(nanolm_core.Block):
    """``TransformerSelfAttentionLayer``: h = x + attn(sa_norm(x)), out = h + mlp(mlp_norm(h)), on contract names."""

    norm_cls, attn_cls, ffn_cls = RMSNorm, Attention, SwiGLU

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        tt = _modules()
        with torch.device("meta"):
            layer = tt.TransformerSelfAttentionLayer(
                attn=self.attn._tt, mlp=self.ffn._tt, sa_norm=self.attn_norm._tt, mlp_norm=self.ffn_norm._tt
            )
        hide(self, "_tt", layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[1] > self.config.max_seq_len:
            raise ValueError(f"Block: expected (B, T ≤ {self.config.max_seq_len}, D), got {tuple(x.shape)}")
        params = {
            "sa_norm.scale": self.attn_norm.weight,
            "mlp_norm.scale": self.ffn_norm.weight,
            **self.attn.tt_params("attn.", x),
            **library_params(self.ffn, MLP_NAMES, "mlp."),
        }
        return call_with(self._tt, params, x)
