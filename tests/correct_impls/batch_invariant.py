"""Correct SwiGLU and Block that are batch-invariant on the CPU, and declare it (``batch_invariant: True``): each
token (SwiGLU) or each sequence (Block) is computed alone, so the work — every GEMM's M — is the same whatever
the batch. The batch-invariance laws then *require* bitwise equality, and these pass them."""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["CONVENTIONS", "Block", "SwiGLU"]

CONVENTIONS = {"SwiGLU": {"batch_invariant": True}, "Block": {"batch_invariant": True}}


class SwiGLU(nanolm_core.SwiGLU):
    """The reference, one token at a time."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.dim)
        return torch.cat([super(SwiGLU, self).forward(r) for r in rows.split(1)]).reshape(x.shape)


class Block(nanolm_core.Block):
    """The reference, one sequence at a time."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([super(Block, self).forward(seq) for seq in x.split(1)])
