"""Pitfall: a device-specific fast path — the accelerator kernel computes differently from the CPU one.

The mistake: the component dispatches on the device, and the accelerator branch takes a shortcut the CPU
branch does not (here: the FFN branch dropped, a fused kernel that skips the second residual). Every test on
the developer's CPU passes; the numbers served from the accelerator differ, and a model evaluated on one
device behaves differently on another.

Why people make it: kernels are written per backend (C++ on the CPU, CUDA/Triton/Metal on accelerators),
often by different people, and tested where they were written.

Evidence: pytorch/pytorch#190491 (MPS layer_norm computes the variance in one pass and clamps it: outputs
diverge from the CPU), pytorch/pytorch#190054 (MPS LayerNorm reinterprets fp32 weights for 16-bit input),
pytorch/pytorch#131750 (MPS layer_norm of a slice reads the wrong rows).

Caught by: Block.block_agrees_with_the_cpu — on every accelerator present, the component agrees with
itself on the CPU within the two outputs' bounds. It needs an accelerator: on a CPU-only machine the law
does not run, so this entry is pending there.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block"]


def _shortcut(x: torch.Tensor) -> bool:
    return x.device.type != "cpu"


class Block(nanolm_core.Block):
    """WRONG on accelerators: the FFN branch dropped there (a fused kernel that skips the second residual)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(self.attn_norm(x))
        return h if _shortcut(x) else h + self.ffn(self.ffn_norm(h))
