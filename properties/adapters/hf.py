"""Shared wrapping of Hugging Face transformers modules: every ``hf-*`` adapter is a few declarations over this.

- ``norm(NormClass, offset=0.0)``: the contract's ``RMSNorm`` running an HF norm's forward on the contract gain
  (for Gemma's ``1 + w`` parameterisation, ``offset=1.0``: the norm is handed w − 1, computed in fp64).
- ``Family``: a Llama-style decoder (config class, decoder layer, attention, rotary embedding, MLP, norm) and the
  name maps between the contract and HF (``kit.Fuse`` for Phi-3's ``qkv_proj`` / ``gate_up_proj``);
  ``components(family, module)`` makes its ``SwiGLU``, ``Attention`` and ``Block``.

Technique (``properties.adapters``): the HF module is built from a config object (no download) on the ``meta``
device, kept out of the module tree, and run by ``torch.func.functional_call`` on the adapter's own parameters,
which carry the contract's names. The decoder gets positions 0..T−1, their cos/sin from the family's rotary
embedding (kept out of the tree too, so ``.to(dtype=bf16)`` cannot round its fp32 ``inv_freq``) and HF's eager
additive causal mask. Requires ``transformers``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

import nanolm_core
from nanolm_core import ModelConfig
from properties.adapters import call_with, hide
from properties.adapters.kit import Fuse, library_params, offset_weight

__all__ = ["ATTN_IMPLEMENTATION", "LLAMA_ATTENTION", "LLAMA_MLP", "Family", "causal_mask", "components", "norm"]

ATTN_IMPLEMENTATION = "eager"  # HF's reference path: softmax in fp32, probabilities rounded to the input dtype
LLAMA_ATTENTION: Mapping[str, str | Fuse] = {f"{p}_proj.weight": f"w{p}.weight" for p in "qkvo"}
LLAMA_MLP: Mapping[str, str | Fuse] = {
    "gate_proj.weight": "w_gate.weight",
    "up_proj.weight": "w_up.weight",
    "down_proj.weight": "w_down.weight",
}


def norm(hf_norm: type[nn.Module], *, offset: float = 0.0, module: str | None = None) -> type[nanolm_core.RMSNorm]:
    """Contract ``RMSNorm`` (parameter ``weight`` = the gain w) running ``hf_norm(dim, eps=eps)`` on w − offset."""

    class RMSNorm(nanolm_core.RMSNorm):
        __doc__ = f"HF ``{hf_norm.__name__}`` on the contract's gain w" + (
            f" (handed w − {offset:g}, computed in fp64)." if offset else "."
        )

        def __init__(self, dim: int, eps: float = 1e-6) -> None:
            super().__init__(dim, eps)
            with torch.device("meta"):
                hide(self, "_hf", hf_norm(dim, eps=eps))

        def hf_weight(self) -> torch.Tensor:
            return offset_weight(self.weight, offset) if offset else self.weight

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return call_with(self._hf, {"weight": self.hf_weight()}, x)

    RMSNorm.__module__ = module or RMSNorm.__module__
    return RMSNorm


@dataclasses.dataclass(frozen=True)
class Family:
    """A Llama-style HF decoder: its classes, config translation and name maps (HF name → contract name)."""

    config_cls: type
    layer: type[nn.Module]
    attention: type[nn.Module]
    rotary: type[nn.Module]
    mlp: type[nn.Module]
    norm: type[nn.Module]
    attn_names: Mapping[str, str | Fuse] = dataclasses.field(default_factory=lambda: dict(LLAMA_ATTENTION))
    mlp_names: Mapping[str, str | Fuse] = dataclasses.field(default_factory=lambda: dict(LLAMA_MLP))
    zeros: tuple[str, ...] = ()  # HF attention parameters the contract does not have, held at 0 (Qwen2's biases)
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # config keyword arguments of the family

    def config(self, config: ModelConfig) -> Any:
        """The HF config equivalent to ``config`` (bias-free, silu, rotate-half RoPE, eager attention)."""
        return self.config_cls(
            hidden_size=config.dim,
            intermediate_size=config.ffn_dim,
            num_attention_heads=config.n_heads,
            num_key_value_heads=config.n_kv_heads,
            head_dim=config.head_dim,
            rms_norm_eps=config.norm_eps,
            rope_theta=config.rope_theta,
            max_position_embeddings=config.max_seq_len,
            vocab_size=config.vocab_size,
            hidden_act="silu",
            attn_implementation=ATTN_IMPLEMENTATION,
            **self.extra,
        )

    def mlp_config(self, dim: int, hidden_dim: int) -> Any:
        """A config for the MLP alone: one head of dimension 2 divides every D and keeps RoPE's dim even (the
        config validates heads, which the MLP never reads)."""
        return self.config_cls(
            hidden_size=dim, intermediate_size=hidden_dim, hidden_act="silu", num_attention_heads=1,
            num_key_value_heads=1, head_dim=2, **self.extra,
        )  # fmt: skip


def causal_mask(T: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """HF's eager additive mask, shape (1, 1, T, T): 0 where key s ≤ query t, finfo(dtype).min above the diagonal."""
    blocked = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
    mask = torch.zeros(T, T, dtype=dtype, device=device).masked_fill(blocked, torch.finfo(dtype).min)
    return mask[None, None]


def decoder_inputs(rotary: nn.Module, x: torch.Tensor) -> dict[str, Any]:
    """What HF's attention needs beside x (B, T, D): positions 0..T−1, their cos/sin (two (B, T, K) tensors in
    x.dtype) and the explicit causal mask."""
    B, T, _ = x.shape
    position_ids = torch.arange(T, device=x.device)[None].expand(B, T)  # (B, T)
    return {
        "attention_mask": causal_mask(T, x.dtype, x.device),
        "position_ids": position_ids,
        "position_embeddings": rotary(x, position_ids),
    }


def components(family: Family, module: str) -> tuple[type[nn.Module], ...]:
    """(RMSNorm, SwiGLU, Attention, Block) of ``family``, their ``__module__`` set to the adapter's ``module``."""
    Norm = norm(family.norm, module=module)

    class SwiGLU(nanolm_core.SwiGLU):
        __doc__ = f"HF ``{family.mlp.__name__}`` on contract-named weights: y = W_down (silu(W_gate x) ⊙ W_up x)."

        def __init__(self, dim: int, hidden_dim: int) -> None:
            super().__init__(dim, hidden_dim)
            with torch.device("meta"):
                hide(self, "_hf", family.mlp(family.mlp_config(dim, hidden_dim)))

        def hf_params(self, prefix: str = "") -> dict[str, torch.Tensor]:
            return library_params(self, family.mlp_names, prefix)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return call_with(self._hf, self.hf_params(), x)

    class Attention(nanolm_core.Attention):
        __doc__ = f"HF ``{family.attention.__name__}`` on the contract's ``wq``, ``wk``, ``wv``, ``wo``."

        def __init__(self, config: ModelConfig) -> None:
            super().__init__(config)
            cfg = family.config(config)
            hide(self, "_rotary", family.rotary(cfg))
            with torch.device("meta"):
                hide(self, "_hf", family.attention(cfg, layer_idx=0))

        def hf_params(self, prefix: str, x: torch.Tensor) -> dict[str, torch.Tensor]:
            params = library_params(self, family.attn_names, prefix)
            for name in family.zeros:  # parameters of HF's the contract does not have: exactly zero
                shape = self._hf.get_parameter(name).shape
                params[prefix + name] = torch.zeros(shape, dtype=x.dtype, device=x.device)
            return params

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out, _ = call_with(self._hf, self.hf_params("", x), x, **decoder_inputs(self._rotary, x))
            return out

    class Block(nanolm_core.Block):
        __doc__ = f"HF ``{family.layer.__name__}``: h = x + attn(attn_norm(x)), out = h + ffn(ffn_norm(h))."

        norm_cls, attn_cls, ffn_cls = Norm, Attention, SwiGLU

        def __init__(self, config: ModelConfig) -> None:
            super().__init__(config)
            with torch.device("meta"):
                hide(self, "_hf", family.layer(family.config(config), layer_idx=0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.dim() != 3:
                raise ValueError(f"Block: input must have shape (B, T, D), got {tuple(x.shape)}")
            if x.shape[1] > self.config.max_seq_len:
                raise ValueError(f"Block: sequence length T={x.shape[1]} exceeds max_seq_len={self.config.max_seq_len}")
            params = {
                "input_layernorm.weight": self.attn_norm.hf_weight(),
                "post_attention_layernorm.weight": self.ffn_norm.hf_weight(),
                **self.attn.hf_params("self_attn.", x),
                **self.ffn.hf_params("mlp."),
            }
            return call_with(self._hf, params, x, **decoder_inputs(self.attn._rotary, x))

    for cls in (SwiGLU, Attention, Block):
        cls.__module__ = module
    return Norm, SwiGLU, Attention, Block


def conventions(
    family: Family, source: str, *, rmsnorm: Mapping[str, Any], swiglu: Mapping[str, Any] | None = None, **block: Any
) -> dict[str, dict[str, Any]]:
    """The CONVENTIONS of a Llama-style family: the norm's (given), the MLP's and the decoder layer's (shared)."""
    mlp = {
        "formula": "y = down_proj(silu(gate_proj(x)) ⊙ up_proj(x))",
        "rounding": "module dtype: each linear, silu and the product round to the input dtype",
        "compute": "module dtype",
        "compute_dtype": "input",
        "weight_mapping": _mapping(family.mlp_names, "ffn."),
        "source": f"{source}.{family.mlp.__name__}",
        **(swiglu or {}),
    }
    layer = {
        "formula": "h = x + self_attn(input_layernorm(x)); out = h + mlp(post_attention_layernorm(h))",
        "rounding": "RoPE cos/sin computed in fp32 and rounded to the input dtype, applied in the input dtype; "
        "scores in the input dtype, softmax in fp32 rounded to the input dtype, then probs·v",
        "compute": "module dtype; fp32 for RoPE angles and softmax, and for the norms (fp64 input too)",
        "compute_dtype": {"fp64": "fp32"},
        "rope_layout": "rotate-half",
        "attention": f"{ATTN_IMPLEMENTATION} with an additive causal mask (finfo(dtype).min above the diagonal)",
        "rope": f"rotate-half, {family.rotary.__name__} (rope_type 'default'), inv_freq kept in fp32",
        "weight_mapping": "attn_norm ↔ input_layernorm, ffn_norm ↔ post_attention_layernorm, "
        + _mapping(family.attn_names, "attn.")
        + ", "
        + _mapping(family.mlp_names, "ffn."),
        "source": f"{source}.{family.layer.__name__}",
        **block,
    }
    return {"RMSNorm": dict(rmsnorm), "SwiGLU": mlp, "Block": layer}


def _mapping(names: Mapping[str, str | Fuse], prefix: str) -> str:
    def one(lib: str, contract: str | Fuse) -> str:
        if isinstance(contract, Fuse):
            return f"{lib} = cat({', '.join(prefix + n for n in contract.names)})"
        return f"{prefix}{contract} ↔ {lib}"

    return ", ".join(one(k, v) for k, v in names.items())
