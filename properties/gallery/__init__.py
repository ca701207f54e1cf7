"""The pitfall gallery: wrong implementations from real bugs, each caught by a named law.

Every module here follows the implementation contract (it defines the component it gets wrong, as
a subclass of the reference with the wrong part overridden) and can be checked like any other:
``nanolm-verify check properties.gallery.mean_subtraction``. Its docstring states the mistake, why
people make it, the real-world evidence and the law that catches it.

``PITFALLS`` maps a pitfall's name to ``Pitfall(module, law, dtype, title, pending)``: the import path
of the wrong implementation, the id of the law in ``properties.registry.LAWS`` that catches it, the
dtype it is demonstrated in, a one-line title, and — only for a known gap — why the ci profile cannot
catch it yet. The kill matrix (tests/commands/test_gallery.py, rendered in docs/gallery.md) checks that each
law fails its pitfall and passes the reference.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import NamedTuple

import torch

__all__ = ["PITFALLS", "Pitfall", "load_module"]


class Pitfall(NamedTuple):
    """One gallery entry: where the wrong implementation lives and how it is caught."""

    module: str  # dotted import path, usable as an implementation spec
    law: str  # "<Component>.<law function>", a key of properties.registry.LAWS
    dtype: str  # torch dtype name the demonstration runs in ("float32", "bfloat16", ...)
    title: str  # one line for tables and the CLI
    pending: str = ""  # a known gap: why the law cannot catch it in the ci profile yet ("" = it must)

    @property
    def name(self) -> str:
        return self.module.rsplit(".", 1)[-1]

    @property
    def component(self) -> str:
        return self.law.split(".", 1)[0]

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


def _entry(name: str, law: str, dtype: str, title: str, pending: str = "") -> tuple[str, Pitfall]:
    return name, Pitfall(f"{__name__}.{name}", law, dtype, title, pending)


# fmt: off
PITFALLS: dict[str, Pitfall] = dict([
    # The course's common mistakes (week 6).
    _entry("mean_subtraction", "RMSNorm.rmsnorm_does_not_center", "float32",
           "subtracting the mean: LayerNorm without a bias"),
    _entry("wrong_axis", "RMSNorm.rmsnorm_rows_are_independent", "float32",
           "normalising over the (T, D) slab instead of each row"),
    _entry("forgot_gamma", "RMSNorm.rmsnorm_scales_with_gamma", "float32",
           "forgetting γ (invisible while γ = 1)"),
    _entry("bf16_accumulation", "RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded", "bfloat16",
           "sum of squares accumulated in bf16"),
    _entry("normalized_residual", "Block.block_is_identity_when_branches_are_zeroed", "float32",
           "adding the normalised x to the stream"),
    _entry("ffn_dim_4d", "Block.block_has_llama_parameter_count", "float32",
           "F = 4D with three matrices (1.5× the parameters)"),
    # Real-world RMSNorm bugs.
    _entry("eps_outside_sqrt", "RMSNorm.rmsnorm_matches_golden", "float32",
           "eps outside the square root: x / (rms + eps)"),
    _entry("missing_eps", "RMSNorm.rmsnorm_maps_zero_row_to_zeros", "float32",
           "no eps: NaN on a zero (padding) row"),
    _entry("fp16_square_overflow", "RMSNorm.rmsnorm_is_scale_invariant", "float16",
           "x² overflows fp16 above |x| ≈ 256, output 0"),
    _entry("gemma_offset_twice", "RMSNorm.rmsnorm_scales_with_gamma", "float32",
           "Gemma's (1 + w) applied to a plain gain"),
    _entry("global_max_rescale", "RMSNorm.rmsnorm_confines_nonfinite_to_row", "float32",
           "overflow guard scaled by the whole tensor's max"),
    _entry("batch_variant", "RMSNorm.rmsnorm_is_batch_invariant", "float32",
           "result bits depend on the batch size"),
    _entry("inplace_input", "RMSNorm.rmsnorm_does_not_modify_input", "float32",
           "normalising in place overwrites the caller's x"),
    _entry("dtype_drift", "RMSNorm.rmsnorm_preserves_shape_dtype_device", "bfloat16",
           "bf16 in, fp32 out"),
    _entry("rmsnorm_wrong_backward", "RMSNorm.rmsnorm_gradients_match_golden", "float32",
           "hand-written backward treats the RMS as a constant"),
    # SwiGLU.
    _entry("swapped_gate_up", "SwiGLU.swiglu_matches_golden", "float32",
           "gate and up projections swapped"),
    _entry("gelu_instead_of_silu", "SwiGLU.swiglu_is_elementwise_silu_gate", "bfloat16",
           "GELU in place of SiLU (GeGLU)"),
    _entry("silu_cancellation", "SwiGLU.swiglu_is_elementwise_silu_gate", "bfloat16",
           "silu(z) = z·(1 − σ(−z)) cancels in bf16"),
    _entry("swiglu_wrong_backward", "SwiGLU.swiglu_gradients_match_golden", "float32",
           "hand-written silu backward uses σ(z) as the derivative"),
    # Block and attention.
    _entry("post_norm", "Block.block_is_identity_when_branches_are_zeroed", "float32",
           "post-norm block (the 2017 order)"),
    _entry("non_causal", "Block.block_is_causal", "float32",
           "attention without the causal mask"),
    _entry("gqa_modulo", "Block.block_matches_golden", "float32",
           "GQA: query head h reads kv head h mod G"),
    _entry("rope_interleaved", "Block.block_matches_golden", "float32",
           "RoPE on interleaved pairs, not rotate-half"),
    _entry("missing_attention_scale", "Block.block_matches_golden", "float32",
           "attention scores without 1/√K"),
])
# fmt: on


def load_module(name: str) -> ModuleType:
    """Import the wrong implementation of pitfall ``name`` (KeyError with the known names if unknown)."""
    if name not in PITFALLS:
        raise KeyError(f"unknown pitfall {name!r}; known: {', '.join(PITFALLS)}")
    return importlib.import_module(PITFALLS[name].module)
