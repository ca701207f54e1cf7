"""Pitfall (Triton): the forward saves its output y for the backward kernel, which reads it as the input x.

The mistake: ``ctx.save_for_backward(y, w, rstd)`` — the author saves the tensor that is at hand after the launch
(or means to save x̂ and saves y = x̂ · w), and the backward kernel, written for x, computes x̂ = y · rstd. The
forward is exact; dx and dw are wrong unless rstd = 1 and w = 1.

Why people make it: forward-only tests pass, and the saved tensor's shape and dtype are right.

Evidence: test-only, none cited — a mutation of the correct kernel (triton_rmsnorm) kept to prove the law has power
over Triton kernels run by the interpreter.

Caught by: RMSNorm.rmsnorm_gradients_match_golden — dx and dw against golden.
"""

from __future__ import annotations

import torch

from properties.gallery import triton_rmsnorm

__all__ = ["RMSNorm"]


class RMSNorm(triton_rmsnorm.RMSNorm):
    """The Triton RMSNorm whose backward kernel is handed y where it reads x."""

    def saved(self, x2: torch.Tensor, y: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return y, w, rstd  # WRONG: the output where the backward kernel reads the input
