"""Pitfall: swapped gate and up projections — the activation is applied to the wrong operand.

The mistake: y = W_down (W_gate x ⊙ silu(W_up x)) instead of W_down (silu(W_gate x) ⊙ W_up x).
Same shapes, same parameter names, same parameter count, and it trains about as well from
scratch — but loading real checkpoints (Llama's w1/w3, HF's gate_proj/up_proj) gives garbage.

Why people make it: the papers call the matrices W, V or W₁, W₃ in different orders, and the
element-wise product "looks symmetric".

Evidence: ml-explore/mlx-lm#767, Nijikadesu/breakdown-minimind#3.

Caught by: SwiGLU.swiglu_matches_golden — random (distinct) W_gate and W_up make the asymmetry visible.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core
from nanolm_core._checks import check_features

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: y = W_down (W_gate x ⊙ silu(W_up x)) — silu on the up projection."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        return self.w_down(self.w_gate(x) * F.silu(self.w_up(x)))  # the bug: gate and up swapped
