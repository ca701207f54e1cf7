"""Adapter ``hf-gemma3``: Hugging Face transformers' ``Gemma3RMSNorm`` wrapped to the contract.

Gemma 3's norm is Gemma's: the gain is stored as w_g = w − 1 (initialised to zeros) and applied as (1 + w_g), the
whole product computed in fp32 and rounded once (``(x * w).to(float16)``, transformers#29402). The adapter keeps
the contract's gain as its parameter and hands Gemma 3 w − 1 in fp64 at each call (see ``hf_gemma`` for when the
effective gain fl32(1 + fl32(w − 1)) is exactly w). (Gemma 3's MLP is GeGLU and its decoder layer adds
post-branch norms and q/k norms: neither is the contract's, so only the norm is provided.)
"""

from __future__ import annotations

from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm

from properties.adapters import hf
from properties.adapters.hf_gemma import GEMMA_RMSNORM

__all__ = ["CONVENTIONS", "RMSNorm"]

CONVENTIONS = {
    "RMSNorm": {**GEMMA_RMSNORM, "source": "transformers.models.gemma3.modeling_gemma3.Gemma3RMSNorm"},
}

RMSNorm = hf.norm(Gemma3RMSNorm, offset=1.0, module=__name__)
