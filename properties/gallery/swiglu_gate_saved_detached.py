"""Pitfall: SwiGLU's hand-written backward keeps the gate activation detached, so second derivatives miss it.

The mistake: the autograd Function stores silu(W_g x) and the up projection on ``ctx`` as ``.detach()``-ed tensors
(not through ``save_for_backward``) and builds its backward from them with differentiable ops. The first derivative
is exact; differentiating it again treats the activations as constants: the second derivative through the gate
and the up projection is lost (gradient penalties, Hessian–vector products).

Why people make it: ``.detach()`` "to avoid keeping the graph alive" looks harmless because first-order gradient
checks pass.

Evidence: test-only (no public report of this kernel is cited here).

Caught by: SwiGLU.swiglu_second_derivatives_pass_gradgradcheck — fp64 gradgradcheck.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU", "SwiGLUFunction"]


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor) -> torch.Tensor:
        g, u = x @ wg.T, x @ wu.T
        ctx.save_for_backward(x, wg, wu, wd)
        ctx.g, ctx.u = g.detach(), u.detach()  # the bug: the activations leave the graph
        return (F.silu(g) * u) @ wd.T

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, wg, wu, wd = ctx.saved_tensors
        g, u = ctx.g, ctx.u
        s = torch.sigmoid(g)
        a = g * s * u  # silu(g)·u
        da = dy @ wd
        dg = da * u * (s * (1 + g * (1 - s)))
        du = da * g * s
        dx = dg @ wg + du @ wu
        rows = lambda t: t.reshape(-1, t.shape[-1])  # noqa: E731
        return dx, rows(dg).T @ rows(x), rows(du).T @ rows(x), rows(dy).T @ rows(a)


class SwiGLU(nanolm_core.SwiGLU):
    """Correct values and first derivatives; WRONG second derivatives through the activations."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return SwiGLUFunction.apply(x, self.w_gate.weight, self.w_up.weight, self.w_down.weight)
