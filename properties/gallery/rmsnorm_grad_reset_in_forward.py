"""Pitfall: RMSNorm's training forward resets γ's gradient buffer — accumulating two micro-batches keeps one.

The mistake: a fused training kernel owns its weight-gradient buffer and initialises it in the forward
(``self.weight.grad = None`` — "the backward will write it"), as if every forward started a new step. Gradient
accumulation runs several forwards and backwards before the optimizer step: each forward throws away what the
earlier backwards accumulated, and ``.grad`` holds the last micro-batch only. Every single forward/backward is
exact, and ``torch.autograd.grad`` never looks at ``.grad``.

Why people make it: a kernel written for one backward per step; gradient accumulation is a training-loop
feature the kernel's tests never run.

Evidence: karpathy/llm.c#163 (the weight-gradient kernels wrote ``=`` where gradient accumulation needs ``+=``).

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "accumulated" (two forward/backward passes
into ``.grad`` must leave twice the first).
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """The reference, but a recording forward clears γ's accumulated gradient — WRONG under accumulation."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():
            self.weight.grad = None  # the bug: the step's earlier micro-batches are lost
        return super().forward(x)
