"""Pitfall: RMSNorm casts γ to the compute dtype once, at its first call, and keeps the copy.

The mistake: to save a cast per call, the first forward stores ``weight.to(fp32)`` on the module and every
later call multiplies by that copy. For a bf16 or fp16 module the cast is a new tensor: a later
``load_state_dict`` or an optimizer's in-place update writes the parameter, never the copy, so the module keeps
normalising with the γ it had at its first call. (In fp32 the "cast" is the parameter itself and nothing goes
stale, which is why fp32 tests pass.)

Why people make it: derived weights (casts, packed or fused layouts) are cached lazily for speed and nothing
invalidates them: a weight reload looks like a rare event until online RL refits weights every step.

Evidence: vllm-project/vllm#57638 (a merged weight built lazily at the first forward kept after a weight
reload: inference silently used the pre-refit weights), ooples/AiDotNet.Tensors#583 (a prepacked-weight cache
stale after an in-place update: a trained model predicted with the weights of before its last step).

Caught by: RMSNorm.rmsnorm_follows_its_module_lifecycle — the call after load_state_dict must match golden
for the new γ.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, upcast_dtype

__all__ = ["RMSNorm"]


class RMSNorm(nanolm_core.RMSNorm):
    """WRONG after a weight update (16-bit dtypes): γ cast to the compute dtype at the first call and kept."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "RMSNorm", self.weight)
        c = upcast_dtype(x.dtype)
        if getattr(self, "_weight_c", None) is None:
            self._weight_c = self.weight.detach().to(c)  # the bug: never refreshed
        xc = x.to(c)
        return (xc * torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self._weight_c).to(x.dtype)
