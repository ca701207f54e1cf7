"""Adapter ``hf-gemma``: Hugging Face transformers' ``GemmaRMSNorm`` wrapped to the contract.

Gemma stores the gain as an offset from one: its parameter is w_g and it multiplies by (1 + w_g), with the
sum computed in fp32. The contract's parameter is the gain w itself. This adapter *keeps the contract's*
``weight`` = w as its only parameter (so ``state_dict`` round-trips exactly) and at every call hands
Gemma's forward w_g = w − 1, computed in fp64 (exact for every w of fp32 or narrower with |w| ≥ 2⁻²⁹).
Gemma then forms its effective gain

    w_eff = fl32(1 + fl32(w − 1)),

which equals w exactly whenever w − 1 is representable in fp32, i.e. when |w| < 2²⁴ and w is a multiple of
2⁻²⁴ (w > 0) or of 2⁻²³ (w < 0): every w in [0.5, 2²⁴) of fp32 or narrower, every bf16 w with 2⁻¹⁶ ≤ |w| < 2²⁴,
every fp16 w ≥ 0 and every fp16 w ≤ −2⁻¹³ (checked exhaustively in tests/adapters/test_adapters.py). Otherwise
w_eff carries up to two extra roundings, |w_eff − w| ≲ 2⁻²⁴·(|w − 1| + |w|) (fp32 weights below 0.5 or
negative, tiny weights): the cost of Gemma's parameterisation, which the suite measures rather than hides.

SwiGLU and Block are not provided: Gemma's MLP is GeGLU (``gelu_pytorch_tanh``), not SwiGLU, so neither
its MLP nor its decoder layer computes the contract's function.
"""

from __future__ import annotations

import torch
from transformers.models.gemma.modeling_gemma import GemmaRMSNorm

from properties.adapters import hf
from properties.adapters.kit import offset_weight

__all__ = ["CONVENTIONS", "GEMMA_RMSNORM", "RMSNorm", "gemma_weight"]

GEMMA_RMSNORM = {
    "formula": "y = fl(x · rsqrt(mean(x²) + eps) · (1 + w_g)),  w_g = w − 1",
    "rounding": "one rounding of the output (the product is computed in fp32, then type_as(x)); "
    "the effective gain fl32(1 + fl32(w − 1)) may add one rounding of the weight",
    "compute": "fp32 for every input dtype — fp64 input is downcast to fp32 (x.float())",
    "compute_dtype": "fp32",
    "roundings": 1,
    "eps_default": 1e-6,
    "eps_placement": "inside",
    "weight_offset": 1.0,
    "weight_mapping": "contract weight w is the parameter; Gemma gets w_g = w − 1 computed in fp64 at each "
    "call; w_eff = fl32(1 + fl32(w − 1)) = w when |w| < 2^24 and w is a multiple of 2^-24 "
    "(w > 0) or 2^-23 (w < 0): all w in [0.5, 2^24), all bf16 w with 2^-16 ≤ |w| < 2^24",
}
CONVENTIONS = {
    "RMSNorm": {**GEMMA_RMSNORM, "source": "transformers.models.gemma.modeling_gemma.GemmaRMSNorm"},
}

RMSNorm = hf.norm(GemmaRMSNorm, offset=1.0, module=__name__)


def gemma_weight(weight: torch.Tensor) -> torch.Tensor:
    """Gemma's parameter w_g = w − 1 for the contract gain w, computed in fp64 (exact for |w| ≥ 2⁻²⁹, fp32 w)."""
    return offset_weight(weight, 1.0)
