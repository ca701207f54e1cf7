"""Pitfall: SwiGLU prepacks [W_gate; W_up] at load time into a class-level cache keyed by shape and weight version.

The mistake: one GEMM for gate and up needs the two matrices concatenated. The module packs them when its weights
are loaded, and again whenever a weight changes afterwards — the cache is keyed by (D, F, dtype, device, the
weights' version counters), so reloads and in-place optimizer updates are seen and one instance is always right.
But the cache lives on the class: two instances of the same sizes (two layers of one model), each loaded once,
have equal keys, and the one loaded last wins — the other layer computes with its neighbour's weights.

Why people make it: the key is written from what changes for one module (its shape, its weights' versions), not
from which module it is; a test builds one module at a time.

Evidence: none known in a public project; vllm-project/vllm#57638 (a merged weight built lazily and kept after a
reload) is the neighbouring lifecycle bug. Kept as a test-only mutation.

Caught by: SwiGLU.swiglu_matches_golden under the protocol "alternated" (another instance of the same sizes,
other weights, loaded after the judged one and called in turn with it).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F

import nanolm_core
from nanolm_core._checks import check_features

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """y = W_down(silu(g) ⊙ u) with [g; u] from one fused GEMM on a cached pack — the cache key WRONG across
    instances of one size."""

    _packed: ClassVar[dict[tuple, torch.Tensor]] = {}

    def _key(self) -> tuple:
        wg, wu = self.w_gate.weight, self.w_up.weight
        return (self.dim, self.hidden_dim, wg.dtype, str(wg.device), wg._version, wu._version)  # the bug: no identity

    def _pack(self) -> torch.Tensor:
        packed = self._packed[self._key()] = torch.cat([self.w_gate.weight, self.w_up.weight]).detach()
        return packed

    def load_state_dict(self, *args: Any, **kwargs: Any) -> Any:
        result = super().load_state_dict(*args, **kwargs)
        self._pack()
        return result

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.dim, "SwiGLU", self.w_gate.weight, same_dtype=True)
        packed = self._packed.get(self._key())
        if packed is None:
            packed = self._pack()
        gate, up = F.linear(x, packed).split(self.hidden_dim, dim=-1)
        return self.w_down(F.silu(gate) * up)
