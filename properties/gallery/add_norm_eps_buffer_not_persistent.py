"""Pitfall: AddRMSNorm keeps eps in a non-persistent buffer filled at construction.

The mistake: as ``rmsnorm_eps_buffer_not_persistent``: eps lives in a tensor buffer registered with
``persistent=False`` and filled in ``__init__``. A model built on the meta device and materialised with
``to_empty`` gets uninitialised memory there; ``load_state_dict`` never refills it.

Why people make it: an eagerly built module always has the buffer; the meta-device path is exercised only at scale.

Evidence: test-only (no public report of this kernel is cited here).

Caught by: AddRMSNorm.add_rmsnorm_survives_copies_moves_and_to_empty — to_empty, reset_parameters(),
load_state_dict.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import upcast_dtype

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG after to_empty + load_state_dict: eps comes from a buffer nothing refills."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__(dim, eps)
        self.register_buffer("eps_buffer", torch.tensor(float(eps)), persistent=False)  # the bug: set once, here

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = x + residual
        c = upcast_dtype(h.dtype)
        hc = h.to(c)
        r = torch.rsqrt(hc.pow(2).mean(dim=-1, keepdim=True) + self.eps_buffer.to(c))
        return (hc * r * self.weight.to(c)).to(h.dtype), h
