"""Pitfall: the attention softmax's hand-written backward keeps the probabilities detached.

The mistake: a custom softmax Function (the heart of a flash-style attention) saves its output P on ``ctx`` as a
detached tensor and returns dS = P ⊙ (dP − Σ dP ⊙ P) from it. Training is exact; a double backward through the
Block (gradient penalties, Hessian–vector products, second-order optimisers) treats P as a constant and loses
every second-order term through the attention weights.

Why people make it: kernels save P (or the log-sum-exp) for the backward by design; first-order gradient checks
pass, and second order is never tested.

Evidence: test-only (fused attention kernels commonly support first order only; no public report of this silent form
is cited here).

Caught by: Block.block_second_derivatives_pass_gradgradcheck — fp64 gradgradcheck.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block", "DetachedSoftmaxAttention", "Softmax"]


class Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s: torch.Tensor) -> torch.Tensor:
        p = torch.softmax(s, dim=-1)
        ctx.p = p.detach()  # the bug: P leaves the graph
        return p

    @staticmethod
    def backward(ctx, dp: torch.Tensor) -> torch.Tensor:
        p = ctx.p
        return p * (dp - (dp * p).sum(-1, keepdim=True))


class DetachedSoftmaxAttention(nanolm_core.Attention):
    """softmax by the Function above: correct values and first derivatives."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = self.expand_kv(k), self.expand_kv(v)
        probs = Softmax.apply(self.mask(self.scores(q, k)))
        return probs @ v.to(probs.dtype)


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = DetachedSoftmaxAttention
