"""Pitfall: GELU in place of SiLU — a GeGLU shipped under the name SwiGLU.

The mistake: y = W_down (gelu(W_gate x) ⊙ W_up x). GELU(z) = z·Φ(z) and SiLU(z) = z·σ(z) have
the same shape (both ≈ ReLU far from 0), and differ by up to ≈ 0.1 near |z| ≈ 1.5 — enough to
wreck a pretrained checkpoint, not enough to look broken on a plot.

Why people make it: GPT-2/BERT code uses ``F.gelu`` everywhere, "swish" and "gelu" are both
"smooth ReLU", and config files name the activation with a string that is easy to mis-map.

Evidence: THUDM/slime#1825, QwenLM/Qwen#95.

Caught by: SwiGLU.swiglu_is_elementwise_silu_gate (the hidden activation must be silu(g) ⊙ u)
and SwiGLU.swiglu_matches_golden.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core
from nanolm_core._checks import check_features

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: y = W_down (gelu(W_gate x) ⊙ W_up x)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        return self.w_down(F.gelu(self.w_gate(x)) * self.w_up(x))  # the bug: GELU, not SiLU
