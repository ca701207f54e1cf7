"""Pitfall: a device-specific fast path — the accelerator kernel computes differently from the CPU one.

The mistake: the component dispatches on the device, and the accelerator branch takes a shortcut the CPU
branch does not (here: the mean of squares accumulated in the input's 16-bit dtype). Every test on the
developer's CPU passes; the numbers served from the accelerator differ, and a model evaluated on one device
behaves differently on another.

Why people make it: kernels are written per backend (C++ on the CPU, CUDA/Triton/Metal on accelerators),
often by different people, and tested where they were written.

Evidence: pytorch/pytorch#190491 (MPS layer_norm computes the variance in one pass and clamps it: outputs
diverge from the CPU), pytorch/pytorch#190054 (MPS LayerNorm reinterprets fp32 weights for 16-bit input),
pytorch/pytorch#131750 (MPS layer_norm of a slice reads the wrong rows).

Caught by: RMSNorm.rmsnorm_agrees_with_the_cpu — on every accelerator present, the component agrees with
itself on the CPU within the two outputs' bounds. It needs an accelerator: on a CPU-only machine the law
does not run, so this entry is pending there.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm"]


def _shortcut(x: torch.Tensor) -> bool:
    return x.device.type != "cpu"


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG on accelerators: y = x·rsqrt(mean(x²) + eps)·w with x² summed in x.dtype there."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _shortcut(x):
            return super().forward(x)
        r = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # the bug: in x.dtype
        return (x * r * self.weight.to(x.dtype)).to(x.dtype)
