"""Adapter ``hf-olmo2``: Hugging Face transformers' ``Olmo2RMSNorm`` wrapped to the contract.

OLMo 2 multiplies by the gain *before* rounding: y = fl((w · (x · rsqrt(mean(x²) + eps))).to(input dtype)), all in
fp32 — one rounding (as torch's ``F.rms_norm`` and Gemma), unlike Llama's two. Its input is converted to fp32 first,
also fp64 input. (OLMo 2's MLP and decoder layer are Llama's with the norms moved after the branches —
post-norm branches, not the contract's pre-norm Block — so only the norm is provided.)

Built by ``properties.adapters.hf`` (no download).
"""

from __future__ import annotations

from transformers.models.olmo2.modeling_olmo2 import Olmo2RMSNorm

from properties.adapters import hf

__all__ = ["CONVENTIONS", "RMSNorm"]

CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = fl(w · (x · rsqrt(mean(x²) + eps)))",
        "rounding": "one rounding: x·r and ·w in fp32 (w promoted), then .to(input dtype)",
        "compute": "fp32 for every input dtype — fp64 input is downcast to fp32 (hidden_states.to(torch.float32))",
        "compute_dtype": "fp32",
        "roundings": 1,
        "eps_default": 1e-6,
        "eps_placement": "inside",
        "weight_offset": 0.0,
        "weight_mapping": "identity (Olmo2RMSNorm.weight)",
        "source": "transformers.models.olmo2.modeling_olmo2.Olmo2RMSNorm",
    },
}

RMSNorm = hf.norm(Olmo2RMSNorm, module=__name__)
