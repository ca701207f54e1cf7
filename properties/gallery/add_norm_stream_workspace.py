"""Pitfall: AddRMSNorm returns the updated stream in one workspace per module — the caller's earlier h changes.

The mistake: serving kernels (vLLM's ``fused_add_rms_norm``) update the residual in place; a module wrapping one
keeps a residual workspace, copies the stream into it, lets the kernel update it and returns it as h — the same
tensor at every call of that shape. A caller that keeps the h of one layer (a residual stream handed to the next
block, a cached activation) while the module runs again finds it overwritten. Every single call is exact, and no
input is modified.

Why people make it: the in-place kernel needs a buffer it may write, and reusing one avoids an allocation per call.

Evidence: none known for an add-norm; ROCm/torch_migraphx#247 (module outputs that shared one preallocated buffer)
is the class. Kept as a test-only mutation.

Caught by: AddRMSNorm.add_rmsnorm_matches_golden under the protocol "held outputs".
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """Values exact; WRONG ownership: outside autograd h is the module's one workspace."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = super().forward(x, residual)
        if torch.is_grad_enabled():
            return y, h
        ws = getattr(self, "_stream", None)
        if ws is None or ws.shape != h.shape or ws.dtype != h.dtype or ws.device != h.device:
            ws = self._stream = torch.empty_like(h)  # the bug: one buffer for every call
        ws.copy_(h)
        return y, ws
