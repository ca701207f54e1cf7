"""Adds the normalised x to the stream: h = norm(x) + attn(norm(x)) — the identity path disappears."""

import torch

import nanolm_core


class Block(nanolm_core.Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.attn_norm(x)
        h = a + self.attn(a)
        return h + self.ffn(self.ffn_norm(h))
