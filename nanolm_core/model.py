"""The pre-norm residual Block and a tiny Transformer with final norm and tied embeddings."""

from __future__ import annotations

import torch
from torch import nn

from nanolm_core._checks import check_instance, check_module_class, check_sequence, check_tokens
from nanolm_core.attention import Attention
from nanolm_core.config import ModelConfig
from nanolm_core.modules import RMSNorm, SwiGLU

__all__ = ["Block", "PostNormBlock", "Transformer"]


class Block(nn.Module):
    """Pre-norm block: h = x + attn(norm₁(x)), out = h + ffn(norm₂(h)).

    x: (B, T, D). The residual stream x is carried unnormalised, so ∂out/∂x = I + ∂branches/∂x;
    with ``attn.wo`` and ``ffn.w_down`` zeroed the block is exactly the identity.
    Casts: each sub-module follows its own policy; the residual additions run in x.dtype.
    The sub-module classes are class attributes, so a variant swaps one of them instead of copying __init__.
    Accepts a ``ModelConfig`` (else TypeError naming ``config``); x (B, T, D), T ≤ max_seq_len, in the
    module's floating dtype and on its device.
    """

    norm_cls: type[nn.Module] = RMSNorm
    attn_cls: type[nn.Module] = Attention
    ffn_cls: type[nn.Module] = SwiGLU

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        check_instance(config, ModelConfig, "config", type(self).__name__)
        self.config = config
        self.attn_norm = self.norm_cls(config.dim, config.norm_eps)
        self.attn = self.attn_cls(config)
        self.ffn_norm = self.norm_cls(config.dim, config.norm_eps)
        self.ffn = self.ffn_cls(config.dim, config.ffn_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(x, self.attn.config.dim, self.attn.config.max_seq_len, type(self).__name__, self.attn.wq.weight)
        h = x + self.attn(self.attn_norm(x))  # (B, T, D)
        return h + self.ffn(self.ffn_norm(h))


class PostNormBlock(Block):
    """Post-norm block of the 2017 transformer: h = norm₁(x + attn(x)), out = norm₂(h + ffn(h)).

    For demonstrations only (gradient rescaled by every norm on the residual path); not the default.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(x, self.attn.config.dim, self.attn.config.max_seq_len, type(self).__name__, self.attn.wq.weight)
        h = self.attn_norm(x + self.attn(x))
        return self.ffn_norm(h + self.ffn(h))


class Transformer(nn.Module):
    """logits = head(norm_f(block_L(… block_1(embed(tokens))))), head tied to embed if configured.

    tokens: (B, T) int64 or int32, T ≤ max_seq_len, ids in [0, V) → logits (B, T, V); else TypeError/ValueError
    naming ``tokens`` (and the position and value of a bad id). ``block_cls`` (an nn.Module class taking the
    config) selects pre-norm (default) or post-norm.
    """

    def __init__(self, config: ModelConfig, block_cls: type[Block] = Block) -> None:
        super().__init__()
        check_instance(config, ModelConfig, "config", "Transformer")
        check_module_class(block_cls, "block_cls", "Transformer")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(block_cls(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.head = nn.Linear(config.dim, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.head.weight = self.embed.weight  # one (V, D) matrix reads tokens and predicts them

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        check_tokens(tokens, cfg.vocab_size, cfg.max_seq_len, "Transformer", self.embed.weight)
        x = self.embed(tokens)  # (B, T, D)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))  # (B, T, V)
