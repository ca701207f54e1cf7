"""Pitfall: a flash-style attention backward recomputes the scaled logits from q and k rounded to bf16.

The mistake: flash attention does not store the T×T probabilities; its backward recomputes s = q·kᵀ/√K and
p = exp(s − lse) from the saved log-sum-exp. This kernel recomputes s from q and k cast to bf16 (the tensor-core
input type) while the forward, and lse, were computed in fp32. Where logits are of order one the mismatch is a few
bf16 ULPs; where they are in the thousands — the q/k projections of models without QK-norm — bf16's spacing there
(32 at 4096, 512 at 10⁵) moves s − lse by hundreds and exp(s − lse) is 0 or inf: the gradients are garbage or NaN.

Why people make it: the forward is checked against an fp32 reference and the backward against autograd on inputs
of unit scale; the recomputation's precision is an implementation detail no test at small logits can see.

Evidence: test-only (recomputation in a lower precision than the forward is a known flash-backward hazard; no public
report of this kernel is cited here).

Caught by: Block.block_jacobian_is_identity_plus_branch — its pinned case with every logit ≈ −10⁵.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core.attention import causal_mask

__all__ = ["Block", "FlashAttend", "RecomputeInBf16Attention"]


class FlashAttend(torch.autograd.Function):
    """o = softmax(mask(q·kᵀ·scale))·v with lse saved; the backward recomputes p from bf16 q and k."""

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
        T = q.shape[-2]
        s = (q @ k.transpose(-2, -1) * scale).masked_fill(~causal_mask(T, q.device), float("-inf"))
        lse = torch.logsumexp(s, dim=-1, keepdim=True)
        o = torch.exp(s - lse) @ v
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.scale = scale
        return o

    @staticmethod
    def backward(ctx, do: torch.Tensor):
        q, k, v, o, lse = ctx.saved_tensors
        T, scale = q.shape[-2], ctx.scale
        s = (q.bfloat16() @ k.bfloat16().transpose(-2, -1)).to(q.dtype) * scale  # the bug: q·kᵀ in bf16
        p = torch.exp(s.masked_fill(~causal_mask(T, q.device), float("-inf")) - lse)
        dv = p.transpose(-2, -1) @ do
        dp = do @ v.transpose(-2, -1)
        ds = p * (dp - (do * o).sum(-1, keepdim=True))
        return ds @ k * scale, ds.transpose(-2, -1) @ q * scale, dv, None


class RecomputeInBf16Attention(nanolm_core.Attention):
    """Attention through the Function above (expanded kv heads; q, k in c as the reference's rope leaves them)."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = self.expand_kv(k), self.expand_kv(v)
        return FlashAttend.apply(q, k, v.to(q.dtype), self.config.head_dim**-0.5)


class Block(nanolm_core.Block):
    """The reference pre-norm block with the attention above."""

    attn_cls = RecomputeInBf16Attention
