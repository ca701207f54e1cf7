"""Subtracts the mean out of habit: LayerNorm without a bias (ggml-org/llama.cpp#173)."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.double()
        return super().forward((xc - xc.mean(-1, keepdim=True)).to(x.dtype))
