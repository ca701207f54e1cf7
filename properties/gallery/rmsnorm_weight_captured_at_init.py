"""Pitfall: RMSNorm hands its kernel the γ tensor captured at construction — tying weights by assignment
leaves the kernel on the old one.

The mistake: at construction the module binds its kernel to its parameters (``self._kernel_args =
[self.weight]``), as a wrapper around a compiled or foreign kernel does. Loading a state dict, an optimizer
step and ``.to()`` all write into that same Parameter object, so the kernel stays right; tying weights — which
*assigns* another module's Parameter (``b.weight = a.weight``, what ``tie_weights`` does) — replaces the
attribute, and the kernel keeps normalising with the γ the module was built with (ones).

Why people make it: binding arguments once saves work per call, and nothing in a single module's life replaces
a parameter object.

Evidence: none known for a norm; tied input/output embeddings are the everyday case of weights shared by
assignment. Kept as a test-only mutation.

Caught by: RMSNorm.rmsnorm_matches_golden under the protocol "tied weights" (the judged instance holds another
instance's parameters, assigned).
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """The reference maths on the γ bound at construction — WRONG once another Parameter is assigned."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__(dim, eps)
        self._kernel_args = [self.weight]  # the bug: the object, not the attribute

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        (w,) = self._kernel_args
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        r = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xc * r * w.to(c)).to(x.dtype)
