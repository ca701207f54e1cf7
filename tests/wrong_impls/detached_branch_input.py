"""The FFN branch reads a detached copy of h: values right, the branch's part of ∂out/∂x is lost."""

import torch

import nanolm_core


class Block(nanolm_core.Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.attn_norm(x))
        return h + self.ffn(self.ffn_norm(h.detach()))
