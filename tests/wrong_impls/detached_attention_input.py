"""The attention branch reads a detached normalised x: values right, ∂attn/∂x missing from the gradient."""

import torch

import nanolm_core


class Block(nanolm_core.Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.attn_norm(x).detach())
        return h + self.ffn(self.ffn_norm(h))
