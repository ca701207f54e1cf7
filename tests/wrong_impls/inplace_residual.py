"""Accumulates the residual in place: x += attn(norm(x)) overwrites the caller's tensor."""

import torch

import nanolm_core


class Block(nanolm_core.Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.add_(self.attn(self.attn_norm(x)))
        return h + self.ffn(self.ffn_norm(h))
