"""Pitfall: RMSNorm keeps eps in a non-persistent buffer filled at construction.

The mistake: to avoid a host-to-device copy per call the module registers ``eps`` as a tensor buffer with
``persistent=False`` (so the state_dict stays the contract's) and fills it in ``__init__``. Large models are built
on the meta device and materialised with ``to_empty`` — uninitialised memory — then given their weights with
``load_state_dict``; a non-persistent buffer is in no state_dict, nothing refills it, and the norm computes with
whatever the memory held.

Why people make it: a module built eagerly always has its buffer; the meta-device path (FSDP, HF's low-memory
loading) is exercised only at scale.

Evidence: test-only (non-persistent buffers computed at construction — RoPE's inv_freq above all — are the known
casualty of meta-device init; no public report of this norm is cited here).

Caught by: RMSNorm.rmsnorm_survives_copies_moves_and_to_empty — to_empty, reset_parameters(), load_state_dict.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG after to_empty + load_state_dict: eps comes from a buffer nothing refills."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__(dim, eps)
        self.register_buffer("eps_buffer", torch.tensor(float(eps)), persistent=False)  # the bug: set once, here

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = upcast_dtype(x.dtype)
        xc = x.to(c)
        ms = xc.pow(2).mean(dim=-1, keepdim=True)
        return (xc * torch.rsqrt(ms + self.eps_buffer.to(c)) * self.weight.to(c)).to(x.dtype)
