"""Adapter ``hf-t5``: Hugging Face transformers' ``T5LayerNorm`` wrapped to the contract.

T5's norm computes the mean square of x converted to fp32, but multiplies the *unconverted* x by the fp32
rsqrt: y = w · fl_w(x · r). For fp16/bf16 input x·r is formed in fp32 and rounded to the weight's dtype, then
multiplied by w (two roundings, as Llama); for fp32 input both products are fp32; for fp64 input x·r is formed
in fp64 but r comes from fp32 arithmetic on x rounded to fp32, so the result is only fp32-accurate. (T5's
feed-forward is ReLU or gated-GELU, not SwiGLU, and its layers are encoder/decoder blocks with relative position
biases, not RoPE: only the norm is provided.)

Built by ``properties.adapters.hf`` (no download).
"""

from __future__ import annotations

from transformers.models.t5.modeling_t5 import T5LayerNorm

from properties.adapters import hf

__all__ = ["CONVENTIONS", "RMSNorm"]

CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = w · fl(x · rsqrt(mean(fl32(x)²) + eps))",
        "rounding": "16-bit input: x·r in fp32 rounded to the weight's dtype, then ·w (two roundings); fp32: two fp32 "
        "roundings; fp64: x·r and ·w in fp64 with r from fp32",
        "compute": "mean square and rsqrt in fp32 for every input dtype (fp64 input too), products in the promoted "
        "dtype of x and r",
        "compute_dtype": "fp32",
        "roundings": 2,
        "eps_default": 1e-6,
        "eps_placement": "inside",
        "weight_offset": 0.0,
        "weight_mapping": "identity (T5LayerNorm.weight)",
        "source": "transformers.models.t5.modeling_t5.T5LayerNorm",
    },
}

RMSNorm = hf.norm(T5LayerNorm, module=__name__)
