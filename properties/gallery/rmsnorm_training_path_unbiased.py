"""Pitfall: the training kernel of RMSNorm divides Σx² by D − 1; the inference kernel is right.

The mistake: the module has two code paths — a plain inference kernel, and a training kernel (a custom
autograd Function that saves what its backward needs) taken whenever autograd records. The training kernel
was written separately and normalises by the unbiased mean Σx²/(D − 1) (``torch.var``'s default habit): its
output is off by a factor √(D/(D − 1)), 4 % at D = 12. Every forward-only test runs under ``torch.no_grad()``
and sees the inference kernel.

Why people make it: training and inference kernels diverge for speed (the training one saves activations, the
inference one fuses more), and tests of values exercise only one of them.

Evidence: none known for this exact slip; huggingface/candle#2168 shows the split itself (RMSNorm's contiguous
fast path had no backward, so training silently took another path than the tests). Kept as a test-only
mutation.

Caught by: RMSNorm.rmsnorm_matches_golden under the protocol "train" (train(), autograd recording).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class _TrainingRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).sum(dim=-1, keepdim=True) / max(1, x.shape[-1] - 1) + eps)  # the bug: D − 1
        ctx.save_for_backward(xc, r, w)
        return (xc * r * w.to(c)).to(x.dtype)

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        xc, r, w = ctx.saved_tensors
        gc, wc = g.to(xc.dtype), w.to(xc.dtype)
        n = max(1, xc.shape[-1] - 1)
        gw = gc * wc
        dx = r * gw - xc * r.pow(3) * (gw * xc).sum(dim=-1, keepdim=True) / n
        dw = (gc * xc * r).reshape(-1, xc.shape[-1]).sum(dim=0)
        return dx.to(g.dtype), dw.to(w.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Inference (no autograd): the reference. Training (autograd records): Σx²/(D − 1) — WRONG."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad):
            check_features(x, self.dim, "RMSNorm", self.weight)
            return _TrainingRMSNorm.apply(x, self.weight, self.eps)
        return super().forward(x)
