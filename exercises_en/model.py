"""Exercise: the pre-norm Block (week 6, step 1). Replace each ``raise NotImplementedError``.

Notation: B batch, T tokens, D = dim, H heads, G kv heads, K = D // H, F = config.ffn_dim.
"""

from __future__ import annotations

import torch
from torch import nn

from nanolm_core import Attention, ModelConfig

from .modules import RMSNorm, SwiGLU, todo  # noqa: F401 (RMSNorm, SwiGLU: yours to use)

__all__ = ["Block"]


class Block(nn.Module):
    """Pre-norm residual block:  h = x + attn(attn_norm(x)),  out = h + ffn(ffn_norm(h)).

    x: (B, T, D). Submodules (the names are the contract):
      attn_norm, ffn_norm: RMSNorm(D, config.norm_eps);
      attn: nanolm_core.Attention(config) — causal grouped-query attention with RoPE (given);
      ffn: SwiGLU(D, config.ffn_dim).
    The residual stream x is added back *unnormalised*: the layer's Jacobian is I + ∂branch/∂x, and
    with attn.wo and ffn.w_down zeroed the block is exactly the identity.
    Common mistakes: x = attn_norm(x) on its own line (the normalised x replaces the stream),
    post-norm order norm(x + f(x)), F = 4D instead of config.ffn_dim.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.attn = Attention(config)  # given
        # TODO: attn_norm, ffn_norm and ffn as described above (2–3 lines), then delete the raise.
        raise NotImplementedError(
            todo(
                "Block.__init__",
                "attn_norm, ffn_norm = RMSNorm(D, config.norm_eps); ffn = SwiGLU(D, config.ffn_dim)",
                "exercises_en/model.py",
            )
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # TODO: two lines, in residual form.
        raise NotImplementedError(
            todo("Block.forward", "h = x + attn(attn_norm(x)); out = h + ffn(ffn_norm(h))", "exercises_en/model.py")
        )
