"""Pitfall: SwiGLU fuses W_gate and W_up into one matrix at its first call and keeps the fused copy.

The mistake: one GEMM against [W_gate; W_up] (2F × D) is faster than two, so the first forward builds the
concatenation and stores it; every later call uses it. ``torch.cat`` copies: after ``load_state_dict`` or an
in-place update of ``w_up`` the module still computes with the first weights' gate and up projections
(W_down, used directly, is current — the output is a mix of old and new weights).

Why people make it: the fused buffer is built lazily because the weights are not loaded yet in ``__init__``;
nothing rebuilds it when they change again.

Evidence: vllm-project/vllm#57638 (GLM's merged q/k/v conv weight, built lazily on the first forward, never
invalidated on a weight reload), vllm-project/vllm#48312 (an RFC collecting reload bugs: derived caches not
invalidated after a weight update).

Caught by: SwiGLU.swiglu_follows_its_module_lifecycle — the call after load_state_dict must match golden for
the new weights.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG after a weight update: [W_gate; W_up] concatenated at the first call and kept."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if getattr(self, "_w13", None) is None:
            self._w13 = torch.cat([self.w_gate.weight, self.w_up.weight]).detach()  # the bug: never rebuilt
        gate, up = F.linear(x, self._w13).chunk(2, dim=-1)
        return self.w_down(F.silu(gate) * up)
