"""Pitfall: AddRMSNorm flattens x and the residual to rows (views) before the add — gradient accumulation then
counts the second micro-batch twice.

The mistake: the kernel wants 2-D rows, so the module passes ``x.view(-1, D)`` and ``residual.view(-1, D)``. In the
backward h = x + r hands both the same gradient; each view's backward returns a view of that one buffer, and
autograd's accumulation into ``.grad`` steals each of them without a copy (pytorch/pytorch#34082: the copy-avoidance
is unsound for views) — so ``x.grad`` and ``residual.grad`` share memory. The first backward is right; the second
adds its gradient in place into ``x.grad`` and again into ``residual.grad``, the same memory: both hold the first
plus twice the second. ``torch.autograd.grad`` never accumulates and is exact; so is a module that does not view
both inputs.

Why people make it: flattening to rows is what every kernel wrapper does, and it is free; the aliasing appears
only in ``.grad``, only from the second backward on.

Evidence: pytorch/pytorch#34082 (AccumulateGrad steals a gradient that is a view; the aliasing becomes observable).

Caught by: AddRMSNorm.add_rmsnorm_gradients_match_golden under the protocol "accumulated" (two backward passes into
``.grad`` must leave exactly twice the first).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """The reference maths on row views of x and the residual — WRONG .grad under gradient accumulation."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        y, h = super().forward(x.reshape(-1, self.dim), residual.reshape(-1, self.dim))  # the bug: two views
        return y.reshape(x.shape), h.reshape(x.shape)
