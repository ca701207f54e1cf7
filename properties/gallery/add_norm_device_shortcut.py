"""Pitfall: a device-specific fast path — the accelerator's fused add + norm returns the sum rounded twice.

The mistake: the component dispatches on the device, and the accelerator branch takes a shortcut the CPU branch
does not (here: the normalised output scaled by (1 + 2^-6), an approximate reciprocal square root). Every test on
the developer's CPU passes; the numbers served from the accelerator differ.

Why people make it: fused add-norm kernels are written per backend (a CUDA or Triton kernel beside the CPU's two
torch operations), and tested where they were written.

Evidence: none known for AddRMSNorm itself; the same class of bug in other norms is pytorch/pytorch#190491 (MPS
layer_norm computes the variance in one pass and clamps it). Kept as a test-only mutation: it proves the
AddRMSNorm device law (from the generic devices family) has power.

Caught by: AddRMSNorm.add_rmsnorm_agrees_with_the_cpu — on every accelerator present, the component agrees with
itself on the CPU within the two outputs' bounds. It needs an accelerator: on a CPU-only machine the law does not
run, so this entry is pending there.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG on accelerators: y scaled by (1 + 2^-6) there (an approximate reciprocal square root)."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = super().forward(x, residual)
        return (y * (1 + 2.0**-6) if x.device.type != "cpu" else y), h
