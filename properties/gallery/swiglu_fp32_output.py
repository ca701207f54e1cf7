"""Pitfall: output dtype drift in the FFN — bf16 in, fp32 out.

The mistake: the weights and x are upcast to fp32 "for accuracy", all three matrix products run in fp32,
and the fp32 result is returned as it is: y = W_down (silu(W_gate x) ⊙ W_up x) with no cast back to x.dtype.

Why people make it: the upcast is explicit, the downcast is easy to forget; the values are even more
accurate, and the next layer silently runs in fp32 (2× memory, or a dtype error far from the cause).

Evidence: none known for the FFN; the same drift in a norm is huggingface/transformers#30236 (see the
dtype_drift pitfall). Kept as a test-only mutation.

Caught by: SwiGLU.swiglu_preserves_shape_dtype_device in bf16/fp16.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core
from nanolm_core._checks import upcast_dtype

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: y = W_down (silu(W_gate x) ⊙ W_up x) computed in fp32 (fp64 for fp64) and returned so."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = upcast_dtype(x.dtype)
        wg, wu, wd = (m.weight.to(c) for m in (self.w_gate, self.w_up, self.w_down))
        xc = x.to(c)
        return F.linear(F.silu(F.linear(xc, wg)) * F.linear(xc, wu), wd)  # the bug: no ".to(x.dtype)"
