"""Correct SwiGLU and Block that are batch-invariant on the CPU, and declare it (``batch_invariant: True``): each
token (SwiGLU) or each sequence (Block) is computed alone, so the work — every GEMM's M — is the same whatever
the batch. The batch-invariance laws then *require* bitwise equality, and these pass them.

Computing one token at a time uses each SwiGLU weight once per token, so autograd makes one weight gradient per
token (each GEMM's result rounded to the parameter's dtype t) and adds them in t as it accumulates the parameter's
gradient: in fp16 and bf16 every dW is a 160-term sum in t, not one GEMM accumulated in fp32 and rounded once (the
contract's default). That is the accumulation dtype this module declares for those two dtypes (in fp32 and fp64 it
is the compute dtype already); without it ``swiglu_gradients_match_golden`` fails in fp16 and bf16 (docs/laws.md,
"Weight gradients summed over a parameter's uses"; ``tests/numerics/test_weight_gradient_accumulation.py``)."""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["CONVENTIONS", "Block", "SwiGLU"]

CONVENTIONS = {
    "SwiGLU": {
        "batch_invariant": True,
        "accumulation_dtype": {"fp16": "fp16", "bf16": "bf16"},
        "notes": "one token at a time: autograd sums the per-token weight gradients in the parameter's dtype",
    },
    "Block": {"batch_invariant": True},
}


class SwiGLU(nanolm_core.SwiGLU):
    """The reference, one token at a time."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.dim)
        return torch.cat([super(SwiGLU, self).forward(r) for r in rows.split(1)]).reshape(x.shape)


class Block(nanolm_core.Block):
    """The reference, one sequence at a time."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([super(Block, self).forward(seq) for seq in x.split(1)])
