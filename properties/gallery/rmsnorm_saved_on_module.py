"""Pitfall: RMSNorm keeps what its backward needs on the module, not on the autograd context.

The mistake: the custom autograd Function stores x and 1/rms for the backward on the *module* (``module._saved
= (x, r)``) instead of ``ctx.save_for_backward``. Any forward of the same module before the backward — the layer
used twice in one graph (weight sharing, a recurrent or looped block), or an evaluation under ``no_grad``
between a forward and its backward — overwrites them, and the first output's backward runs on the second input.
One forward followed by its backward is exact.

Why people make it: ``ctx`` looks like ceremony when the module is already at hand, and the tests run one forward
and one backward.

Evidence: none known in a public project; a test-only mutation that proves the protocol has power.

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "forwards between" (the module applied again
in the same graph, then under no_grad, before the backward).
"""

from __future__ import annotations

from typing import Any

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class _Function(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, module: Any) -> torch.Tensor:
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + module.eps)
        ctx.module = module
        return (xc * r * w.to(c)).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        xc, r, w = ctx.module._saved  # the bug: whatever the module's latest forward left there
        gc, wc = g.to(xc.dtype), w.to(xc.dtype)
        gw = gc * wc
        dx = r * gw - xc * r.pow(3) * (gw * xc).sum(dim=-1, keepdim=True) / xc.shape[-1]
        dw = (gc * xc * r).reshape(-1, xc.shape[-1]).sum(dim=0)
        return dx.to(g.dtype), dw.to(w.dtype), None


class RMSNorm(nanolm_core.RMSNorm):
    """Forward exact; backward from the module's latest saved (x, 1/rms) — WRONG after another forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        xc = x.detach().to(upcast_dtype(x.dtype))
        self._saved = (xc, torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps), self.weight.detach())
        return _Function.apply(x, self.weight, self)
