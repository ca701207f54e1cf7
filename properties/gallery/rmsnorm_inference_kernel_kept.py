"""Pitfall: RMSNorm picks its kernel at the first call — and a first call in inference_mode picks one with no
backward, kept when training starts.

The mistake: the module decides once, at its first call, whether it serves or trains (``self._serving =
torch.is_inference_mode_enabled()``) and from then on runs the serving kernel — a fused forward outside autograd —
whenever it decided "serving". A warm-up or evaluation under ``torch.inference_mode()`` before training makes
every later training step return a detached output: no gradient reaches x or γ. A module that is trained first
is exact.

Why people make it: kernel selection is hoisted out of the hot path, and the mode of the first call looks like a
property of the process.

Evidence: Dao-AILab/flash-attention#299 (the rotary cos/sin cache built in inference mode broke the training
that followed), sgl-project/sglang#33470 (lazy buffers built under inference_mode break later calls in another
mode).

Caught by: RMSNorm.rmsnorm_gradients_match_golden under the protocol "modes switched" (inference_mode and
no_grad calls on one instance before the training call).
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """The reference, but a module first called under inference_mode keeps a detached kernel — WRONG."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not hasattr(self, "_serving"):
            self._serving = torch.is_inference_mode_enabled()  # the bug: decided once, at the first call
        if self._serving:
            with torch.no_grad():
                return super().forward(x)
        return super().forward(x)
