"""The catalogue of wrong implementations: one module per bug, each caught by the law designated to it.

Every module follows the implementation contract: it defines the one component it gets wrong, as a subclass
of the reference (``nanolm_core``) that overrides the one wrong thing — for attention, one named step of
``nanolm_core.Attention`` (``rope``, ``expand_kv``, ``scores``, ``mask``, …) — and can be checked like any other
implementation: ``nanolm-verify check properties.gallery.mean_subtraction``. Its docstring states the mistake,
why people make it, the evidence (``owner/repo#number`` where a public project hit it) and the law that
catches it.

``PITFALLS`` is the one table, name → ``Pitfall(module, law, dtype, kind, title, pending)``:

    law      the id in ``LAWS`` designated to catch it (``<Component>.<law function>``)
    dtype    the dtype it is demonstrated in ("fp32", "bf16", …)
    kind     "course mistake" (the course's seeds), "real-world bug" (a public project hit it: its evidence
             cites owner/repo#number) or "test-only" (a mutation kept to prove a law has power)
    title    one line for tables and the command line
    pending  "" when the law must catch it in the ci profile (with cause "law"); else the known gap

``Pitfall.evidence`` reads the ``owner/repo#number`` references from the module's docstring (one place for
them). The kill matrix (``tests/commands/test_kill_matrix.py``, rendered in docs/gallery.md by
``nanolm-verify pitfalls --markdown``) proves each law against its entries and the reference.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path
from typing import NamedTuple

import torch

from golden.formats import fmt

__all__ = ["KINDS", "PITFALLS", "Pitfall"]

COURSE, REAL, TEST = KINDS = ("course mistake", "real-world bug", "test-only")
_REFERENCE = re.compile(r"\b[\w.-]+/[\w.-]+#\d+\b")  # owner/repo#number


class Pitfall(NamedTuple):
    """One catalogue entry: where the wrong implementation lives and the law designated to catch it."""

    module: str  # dotted import path (or a .py path), usable as an implementation spec
    law: str  # "<Component>.<law function>", a key of LAWS
    dtype: str  # the dtype it is demonstrated in: "fp64", "fp32", "fp16" or "bf16"
    kind: str  # one of KINDS
    title: str  # one line for tables and the CLI
    pending: str = ""  # a known gap: why the law cannot catch it (cause "law", ci profile) yet; "" = it must
    requires: str = ""  # a package it is written in ("triton"): without it the entry is skipped, with this reason

    @property
    def missing(self) -> str:
        """Why the entry cannot run here ("" when it can): the package it is written in is not installed."""
        if self.requires and importlib.util.find_spec(self.requires) is None:
            return f"{self.requires} is not installed (pip install 'nanolm-verify[{self.requires}]')"
        return ""

    @property
    def name(self) -> str:
        return self.module.removesuffix(".py").replace("/", ".").rsplit(".", 1)[-1]

    @property
    def component(self) -> str:
        return self.law.split(".", 1)[0]

    @property
    def torch_dtype(self) -> torch.dtype:
        return fmt(self.dtype).dtype

    @property
    def docstring(self) -> str:
        """The module's docstring, read from its source: the wrong implementation is not imported (run session)."""
        path = self.module if self.module.endswith(".py") else importlib.util.find_spec(self.module).origin
        return ast.get_docstring(ast.parse(Path(path).read_text(encoding="utf-8")), clean=False) or ""

    @property
    def evidence(self) -> tuple[str, ...]:
        """The owner/repo#number references of the docstring's "Evidence:" paragraph, in order."""
        section = self.docstring.partition("Evidence:")[2].split("\n\n", 1)[0]
        return tuple(dict.fromkeys(_REFERENCE.findall(section)))


def _entry(
    name: str, law: str, dtype: str, kind: str, title: str, pending: str = "", requires: str = ""
) -> tuple[str, Pitfall]:
    return name, Pitfall(f"{__name__}.{name}", law, dtype, kind, title, pending, requires)


_NEEDS_ACCELERATOR = "the law compares an accelerator with the CPU: it does not run on a CPU-only machine"

# fmt: off
PITFALLS: dict[str, Pitfall] = dict([
    # RMSNorm
    _entry("mean_subtraction", "RMSNorm.rmsnorm_does_not_center", "fp32", COURSE,
           "subtracting the mean: LayerNorm without a bias"),
    _entry("wrong_axis", "RMSNorm.rmsnorm_rows_are_independent", "fp32", COURSE,
           "normalising over the (T, D) slab instead of each row"),
    _entry("forgot_gamma", "RMSNorm.rmsnorm_scales_with_gamma", "fp32", COURSE,
           "forgetting γ (invisible while γ = 1)"),
    _entry("bf16_accumulation", "RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded", "bf16", COURSE,
           "sum of squares accumulated in bf16"),
    _entry("eps_outside_sqrt", "RMSNorm.rmsnorm_matches_golden", "fp32", REAL,
           "eps outside the square root: x / (rms + eps)"),
    _entry("missing_eps", "RMSNorm.rmsnorm_maps_zero_row_to_zeros", "fp32", REAL,
           "no eps: NaN on a zero (padding) row"),
    _entry("fp16_square_overflow", "RMSNorm.rmsnorm_is_scale_invariant", "fp16", REAL,
           "x² overflows fp16 above 256, the row becomes 0"),
    _entry("gemma_offset_twice", "RMSNorm.rmsnorm_scales_with_gamma", "fp32", REAL,
           "Gemma's (1 + w) applied to a plain gain"),
    _entry("global_max_rescale", "RMSNorm.rmsnorm_confines_nonfinite_to_row", "fp32", REAL,
           "overflow guard scaled by the whole tensor's max"),
    _entry("batch_variant", "RMSNorm.rmsnorm_is_batch_invariant", "fp32", REAL,
           "result bits depend on the batch size"),
    _entry("inplace_input", "RMSNorm.rmsnorm_does_not_modify_input", "fp32", REAL,
           "normalising in place overwrites the caller's x"),
    _entry("dtype_drift", "RMSNorm.rmsnorm_preserves_shape_dtype_device", "bf16", REAL,
           "bf16 in, fp32 out"),
    _entry("rmsnorm_wrong_backward", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", REAL,
           "hand-written backward treats the RMS as a constant"),
    _entry("norm_without_mean", "RMSNorm.rmsnorm_output_has_norm_sqrt_d", "fp32", TEST,
           "sum of squares where the mean belongs: ‖y‖ = 1, not √D"),
    _entry("abs_of_x", "RMSNorm.rmsnorm_preserves_sign", "fp32", TEST,
           "normalising |x|: the sign is lost"),
    _entry("rmsnorm_weight_backward", "RMSNorm.rmsnorm_gradients_pass_gradcheck", "fp64", TEST,
           "hand-written backward: dγ without the normaliser"),
    # SwiGLU
    _entry("swapped_gate_up", "SwiGLU.swiglu_matches_golden", "fp32", REAL,
           "gate and up projections swapped"),
    _entry("gelu_instead_of_silu", "SwiGLU.swiglu_is_elementwise_silu_gate", "bf16", REAL,
           "GELU in place of SiLU (GeGLU)"),
    _entry("silu_cancellation", "SwiGLU.swiglu_is_elementwise_silu_gate", "bf16", REAL,
           "silu(z) = z·(1 − σ(−z)) cancels in bf16"),
    _entry("swiglu_wrong_backward", "SwiGLU.swiglu_gradients_match_golden", "fp32", REAL,
           "hand-written silu backward uses σ(z) as the derivative"),
    _entry("swiglu_bias", "SwiGLU.swiglu_has_three_matrices_of_ffn_dim", "fp32", REAL,
           "nn.Linear's default bias: six tensors, not three"),
    _entry("swiglu_offset", "SwiGLU.swiglu_maps_zero_to_zero", "fp32", TEST,
           "a stray constant in the hidden activation"),
    _entry("hidden_position_scale", "SwiGLU.swiglu_is_invariant_to_hidden_permutation", "fp32", TEST,
           "hidden unit j scaled by its position"),
    _entry("token_mixing", "SwiGLU.swiglu_tokens_are_independent", "fp32", TEST,
           "each token mixed with its neighbour before the FFN"),
    _entry("leaky_output", "SwiGLU.swiglu_is_linear_in_w_down", "fp32", TEST,
           "a leaky clamp after W_down"),
    _entry("swiglu_fp32_output", "SwiGLU.swiglu_preserves_shape_dtype_device", "bf16", TEST,
           "bf16 in, fp32 out"),
    _entry("inplace_swiglu", "SwiGLU.swiglu_does_not_modify_input", "fp32", TEST,
           "the input buffer reused as scratch"),
    _entry("bf16_truncated_hidden", "SwiGLU.swiglu_bf16_drift_from_fp32_is_bounded", "bf16", TEST,
           "bf16 hidden activation stored with 4 mantissa bits"),
    _entry("swiglu_up_backward", "SwiGLU.swiglu_gradients_pass_gradcheck", "fp64", TEST,
           "no gradient through the up projection"),
    # Block
    _entry("normalized_residual", "Block.block_is_identity_when_branches_are_zeroed", "fp32", COURSE,
           "adding the normalised x to the stream"),
    _entry("ffn_dim_4d", "Block.block_has_llama_parameter_count", "fp32", COURSE,
           "F = 4D with three matrices (1.5× the parameters)"),
    _entry("post_norm", "Block.block_preserves_gradient_through_depth", "fp32", REAL,
           "post-norm block (the 2017 order)"),
    _entry("non_causal", "Block.block_is_causal", "fp32", REAL,
           "attention without the causal mask"),
    _entry("gqa_modulo", "Block.block_matches_golden", "fp32", REAL,
           "GQA: query head h reads kv head h mod G"),
    _entry("rope_interleaved", "Block.block_matches_golden", "fp32", REAL,
           "RoPE on interleaved pairs, not rotate-half"),
    _entry("missing_attention_scale", "Block.block_matches_golden", "fp32", REAL,
           "attention scores without 1/√K"),
    _entry("detached_branch_input", "Block.block_jacobian_is_identity_plus_branch", "fp32", TEST,
           "the FFN branch reads a detached h"),
    _entry("block_fp32_output", "Block.block_preserves_shape_dtype_device", "bf16", TEST,
           "residual stream kept and returned in fp32"),
    _entry("inplace_residual", "Block.block_does_not_modify_input", "fp32", TEST,
           "the residual added in place into the caller's x"),
    _entry("detached_attention_input", "Block.block_gradients_pass_gradcheck", "fp64", TEST,
           "the attention branch reads a detached norm(x)"),
    _entry("ffn_4d_default", "Block.block_ffn_dim_is_8d_over_3", "fp32", TEST,
           "F = 4D whenever the config did not say otherwise"),
    # Regimes the drawn cases do not reach: sizes, sequence lengths (the stored corpus holds them).
    _entry("capped_block_rmsnorm", "RMSNorm.rmsnorm_matches_stored_golden", "fp64", REAL,
           "columns past a 4096 block left out of the sum"),
    _entry("swiglu_dropped_tail", "SwiGLU.swiglu_matches_stored_golden", "fp32", REAL,
           "the last partial tile of hidden units dropped"),
    _entry("rope_short_table", "Block.block_matches_stored_golden", "fp32", REAL,
           "a 4-position RoPE table indexed modulo 4"),
    # Regimes of real kernels: memory layout (views of x and of the loaded weights).
    _entry("rmsnorm_dropped_column_stride", "RMSNorm.rmsnorm_ignores_memory_layout", "fp32", REAL,
           "the normalise pass reads x at unit column stride"),
    _entry("swiglu_assumed_row_pitch", "SwiGLU.swiglu_ignores_memory_layout", "fp32", REAL,
           "only stride(−1) checked: rows read at pitch D"),
    _entry("block_residual_storage_offset", "Block.block_ignores_memory_layout", "fp32", REAL,
           "the residual read from the storage base, not x's data_ptr"),
    _entry("add_norm_residual_with_x_strides", "AddRMSNorm.add_rmsnorm_ignores_memory_layout", "fp32", TEST,
           "the residual addressed with x's strides"),
    # Regimes of real kernels: the module's lifecycle (reload, in-place update, several instances).
    _entry("rmsnorm_cached_weight_cast", "RMSNorm.rmsnorm_follows_its_module_lifecycle", "bf16", REAL,
           "γ cast once at the first call: stale after a reload"),
    _entry("swiglu_stale_fused_weight", "SwiGLU.swiglu_follows_its_module_lifecycle", "fp32", REAL,
           "[W_gate; W_up] fused at the first call: stale after a reload"),
    _entry("rope_class_cache", "Block.block_follows_its_module_lifecycle", "fp32", TEST,
           "RoPE tables cached per class, rope_theta not in the key"),
    # Regimes of real kernels: long sequences.
    _entry("sliding_window_attention", "Block.block_every_earlier_token_reaches_the_last", "fp32", REAL,
           "a 512-token attention window in a full-attention model"),
    # Regimes of real kernels: gradients on many rows (reductions over row blocks).
    _entry("rmsnorm_dgamma_first_block", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", REAL,
           "dγ reduced over the first block of 64 rows only"),
    _entry("swiglu_dw_first_block", "SwiGLU.swiglu_gradients_match_golden", "fp32", TEST,
           "dW_down accumulated over the first 64 tokens only"),
    _entry("attention_dwo_first_block", "Block.block_parameter_gradients_match_fp64", "fp32", TEST,
           "dW_o accumulated over the first 64 tokens only"),
    # Regimes of real kernels: model sizes (widths D = 2048 … 16384, F = 28672).
    _entry("rmsnorm_unnormalised_tail", "RMSNorm.rmsnorm_output_has_norm_sqrt_d", "fp32", REAL,
           "the remainder tile of a wide row left unnormalised"),
    _entry("swiglu_tail_accumulator_carried", "SwiGLU.swiglu_tokens_are_independent", "fp32", TEST,
           "the remainder hidden tile's accumulator not reset per token"),
    # Regimes of real kernels: a norm's domain (rows up to the overflow threshold of Σx²).
    _entry("rmsnorm_half_variance", "RMSNorm.rmsnorm_is_exact_up_to_the_overflow_threshold", "fp16", REAL,
           "the variance kept in fp16: zeros above an RMS of 256"),
    _entry("add_norm_half_variance", "AddRMSNorm.add_rmsnorm_is_exact_up_to_the_overflow_threshold", "fp16", REAL,
           "add-norm variance kept in fp16: y zeros above RMS 256"),
    # Call protocols: every way a framework calls a module (properties/library/protocols.py), one entry each.
    _entry("rmsnorm_training_path_unbiased", "RMSNorm.rmsnorm_matches_golden", "fp32", TEST,
           "the training kernel divides Σx² by D − 1 (protocol: train)"),
    _entry("block_decode_path_in_prefill", "Block.block_matches_golden", "fp32", TEST,
           "inference_mode takes a decode path without the mask"),
    _entry("rmsnorm_inference_kernel_kept", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", REAL,
           "kernel picked under inference_mode, kept for training"),
    _entry("rmsnorm_reused_output_buffer", "RMSNorm.rmsnorm_matches_golden", "fp32", REAL,
           "every output written into one buffer (held outputs)"),
    _entry("swiglu_fused_cache_by_shape", "SwiGLU.swiglu_matches_golden", "fp32", TEST,
           "fused gate/up cache keyed by shape, shared by instances"),
    _entry("rmsnorm_weight_captured_at_init", "RMSNorm.rmsnorm_matches_golden", "fp32", TEST,
           "kernel bound to the γ object of construction (tied)"),
    _entry("rmsnorm_upcast_decided_once", "RMSNorm.rmsnorm_matches_golden", "bf16", TEST,
           "upcast decided at the first call, before .to(bf16)"),
    _entry("rmsnorm_grad_reset_in_forward", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", REAL,
           "forward resets γ.grad: accumulation keeps one batch"),
    _entry("rmsnorm_saved_on_module", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", TEST,
           "backward state on the module, overwritten by a forward"),
    _entry("rmsnorm_dy_assumed_contiguous", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", REAL,
           "backward walks dy as a dense array (dy from .sum())"),
    _entry("rmsnorm_broadcast_dy_fast_path", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", TEST,
           "a row-broadcast dy taken for a broadcast x"),
    _entry("rmsnorm_dy_unit_column_stride", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", REAL,
           "backward assumes unit column stride (transposed dy)"),
    _entry("rmsnorm_dy_row_pitch", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", REAL,
           "backward checks dy.stride(−1) only, reads rows at pitch D"),
    _entry("rmsnorm_frozen_gamma_skips_term", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", TEST,
           "with γ frozen the backward skips a term of dx"),
    _entry("rmsnorm_cast_cached_without_grad", "RMSNorm.rmsnorm_gradients_match_golden", "bf16", TEST,
           "γ cast cached by a no_grad call, reused detached"),
    # Sizes where kernels switch code path (laws/paths.py, the long reach, extreme logits, 16-bit backward).
    _entry("rmsnorm_grid_rows_capped", "RMSNorm.rmsnorm_matches_golden_at_code_path_sizes", "fp32", REAL,
           "grid capped at 65,535 programs: later rows never written"),
    _entry("swiglu_grid_rows_per_program", "SwiGLU.swiglu_matches_golden_at_code_path_sizes", "fp32", REAL,
           "2 rows per program × 65,535: rows past 131,070 unwritten"),
    _entry("rmsnorm_row_block_tail", "RMSNorm.rmsnorm_matches_golden_at_code_path_sizes", "fp32", REAL,
           "narrow rows in blocks of 8: a partial last block skipped"),
    _entry("rmsnorm_single_element_tail", "RMSNorm.rmsnorm_matches_golden_at_code_path_sizes", "fp32", REAL,
           "Σx² in blocks of 512 drops a one-element tail (D = 2^k + 1)"),
    _entry("attention_grid_batch_heads_capped", "Block.block_matches_golden_at_code_path_sizes", "fp32", REAL,
           "one attention program per (sequence, head), 65,535 at most"),
    _entry("attention_chunk_restart", "Block.block_every_earlier_token_reaches_the_last", "fp32", REAL,
           "prefill chunks of 4,096 tokens blind to earlier chunks"),
    _entry("softmax_without_max", "Block.block_matches_golden", "fp32", REAL,
           "softmax as exp(s)/Σexp(s): NaN at logits of ±4096"),
    _entry("attention_backward_exp_in_half", "Block.block_jacobian_is_identity_plus_branch", "fp16", REAL,
           "backward recomputes exp(s) in fp16: NaN past logit 11"),
    # Batch invariance, a declared property (issue 22): the laws require it where the module declares it.
    _entry("swiglu_batch_variant", "SwiGLU.swiglu_is_batch_invariant", "fp32", REAL,
           "declared batch-invariant, split-K by the token count"),
    _entry("block_batch_variant", "Block.block_is_batch_invariant", "fp32", REAL,
           "declared batch-invariant, FFN split by the batch size"),
    # The module as a whole.
    _entry("threads_at_import", "Module.module_import_leaves_torch_state_unchanged", "fp32", REAL,
           "torch's thread count changed at import"),
    # Precision downgrades (issue 18): one stage computed in bf16 inside an fp32 component, at model sizes.
    _entry("norm_reduction_in_bf16", "RMSNorm.rmsnorm_matches_stored_golden", "fp32", REAL,
           "the sum of squares reduced in bf16 in an fp32 norm"),
    _entry("softmax_in_bf16", "Block.block_matches_stored_golden", "fp32", REAL,
           "the attention softmax evaluated in bf16 in an fp32 block"),
    _entry("rope_tables_in_bf16", "Block.block_matches_stored_golden", "fp32", REAL,
           "RoPE cos/sin tables cached in bf16 in an fp32 block"),
    _entry("pv_in_bf16", "Block.block_matches_stored_golden", "fp32", TEST,
           "the probabilities·values GEMM in bf16 in an fp32 block"),
    _entry("wgrad_in_bf16", "SwiGLU.swiglu_gradients_match_golden", "fp32", REAL,
           "W_down's weight gradient accumulated in bf16"),
    _entry("swiglu_gate_in_bf16", "SwiGLU.swiglu_matches_golden", "fp32", TEST,
           "the SiLU gate evaluated in bf16 in an fp32 FFN"),
    # Device-specific paths (the laws compare an accelerator with the CPU: they need an accelerator to run).
    _entry("rmsnorm_device_shortcut", "RMSNorm.rmsnorm_agrees_with_the_cpu", "bf16", REAL,
           "the accelerator kernel accumulates x² in bf16", pending=_NEEDS_ACCELERATOR),
    _entry("swiglu_device_shortcut", "SwiGLU.swiglu_agrees_with_the_cpu", "fp32", REAL,
           "the accelerator kernel approximates SiLU", pending=_NEEDS_ACCELERATOR),
    _entry("block_device_shortcut", "Block.block_agrees_with_the_cpu", "fp32", REAL,
           "the accelerator kernel skips the FFN residual", pending=_NEEDS_ACCELERATOR),
    _entry("add_norm_device_shortcut", "AddRMSNorm.add_rmsnorm_agrees_with_the_cpu", "fp32", TEST,
           "the accelerator kernel approximates 1/√", pending=_NEEDS_ACCELERATOR),
    # AddRMSNorm: the residual add and the next norm (one fused kernel in serving stacks).
    _entry("add_norm_normalized_stream", "AddRMSNorm.add_rmsnorm_matches_golden", "fp32", COURSE,
           "the normalised value put back on the stream"),
    _entry("add_norm_stale_residual", "AddRMSNorm.add_rmsnorm_sum_is_rounded_once", "bf16", TEST,
           "the residual copied before the in-place kernel ran"),
    _entry("add_norm_residual_fp32", "AddRMSNorm.add_rmsnorm_preserves_shape_dtype_device", "bf16", TEST,
           "the updated residual returned in fp32"),
    _entry("add_norm_half_sum_of_squares", "AddRMSNorm.add_rmsnorm_matches_stored_golden", "bf16", REAL,
           "Σh² accumulated in bf16"),
    _entry("add_norm_reads_branch", "AddRMSNorm.add_rmsnorm_normalizes_the_sum_it_returns", "fp32", REAL,
           "the norm reads x instead of x + residual"),
    _entry("add_norm_in_place", "AddRMSNorm.add_rmsnorm_outputs_are_new_tensors", "fp32", REAL,
           "in-place add and norm: fp32's .float() is no copy"),
    _entry("add_norm_stream_gradient_dropped", "AddRMSNorm.add_rmsnorm_gradients_match_golden", "fp32", TEST,
           "d(residual) without the stream's own gradient"),
    _entry("add_norm_reused_buffers", "AddRMSNorm.add_rmsnorm_matches_golden", "fp32", REAL,
           "y and h in buffers the next call overwrites (held outputs)"),
    _entry("add_norm_flattened_views", "AddRMSNorm.add_rmsnorm_gradients_match_golden", "fp32", REAL,
           "inputs flattened by view: x.grad and r.grad share storage"),
    _entry("add_norm_grid_rows_capped", "AddRMSNorm.add_rmsnorm_matches_golden_at_code_path_sizes", "fp32", REAL,
           "a grid capped at 65,535 rows: y and h past it unwritten"),
    # The generic axes of a call (laws/axes.py, issue 34): one entry per axis and component it can break.
    # call contexts: threads, deterministic algorithms, autocast, inference_mode
    _entry("rmsnorm_thread_split_tail", "RMSNorm.rmsnorm_holds_in_every_call_context", "fp32", TEST,
           "rows split by thread count: the remainder unnormalised"),
    _entry("swiglu_deterministic_tail", "SwiGLU.swiglu_holds_in_every_call_context", "fp32", TEST,
           "deterministic fallback drops the partial hidden tile"),
    _entry("rmsnorm_autocast_half_cast", "RMSNorm.rmsnorm_holds_in_every_call_context", "fp32", TEST,
           "autocast path casts x to fp16 under bf16 autocast"),
    _entry("block_heads_split_by_threads", "Block.block_holds_in_every_call_context", "fp32", TEST,
           "heads split by thread count: the remainder never run"),
    _entry("add_norm_inference_in_place", "AddRMSNorm.add_rmsnorm_holds_in_every_call_context", "fp32", TEST,
           "inference_mode takes the in-place serving kernel"),
    # mixed parameter / input dtypes (fp32 master weights, bf16 activations)
    _entry("rmsnorm_reads_x_in_weight_dtype", "RMSNorm.rmsnorm_accepts_parameters_in_another_dtype", "bf16", TEST,
           "x read through a pointer of the weight's dtype"),
    _entry("add_norm_reads_x_in_weight_dtype", "AddRMSNorm.add_rmsnorm_accepts_parameters_in_another_dtype", "bf16",
           TEST, "x and residual read as the weight's dtype"),
    # second order (double backward)
    _entry("rmsnorm_backward_not_differentiable", "RMSNorm.rmsnorm_second_derivatives_pass_gradgradcheck", "fp64",
           TEST, "hand-written backward under no_grad: no 2nd derivative"),
    _entry("swiglu_gate_saved_detached", "SwiGLU.swiglu_second_derivatives_pass_gradgradcheck", "fp64", TEST,
           "backward from detached activations: 2nd order lost"),
    _entry("add_norm_rstd_saved_detached", "AddRMSNorm.add_rmsnorm_second_derivatives_pass_gradgradcheck", "fp64",
           TEST, "1/rms saved detached: 2nd derivative misses it"),
    _entry("attention_probs_saved_detached", "Block.block_second_derivatives_pass_gradgradcheck", "fp64", TEST,
           "softmax backward from detached P: 2nd order lost"),
    # every subset of outputs differentiated
    _entry("add_norm_backward_needs_y_cotangent", "AddRMSNorm.add_rmsnorm_differentiates_any_subset_of_outputs",
           "fp32", TEST, "backward returns nothing when only h is used"),
    # storage reused between calls
    _entry("rmsnorm_memo_by_data_ptr", "RMSNorm.rmsnorm_ignores_storage_reuse", "fp32", TEST,
           "last result memoised by the input's data_ptr"),
    _entry("swiglu_memo_by_data_ptr", "SwiGLU.swiglu_ignores_storage_reuse", "fp32", TEST,
           "gate/up projections cached by the input's data_ptr"),
    _entry("block_memo_by_data_ptr", "Block.block_ignores_storage_reuse", "fp32", TEST,
           "last output memoised by the input's data_ptr"),
    _entry("add_norm_memo_by_data_ptr", "AddRMSNorm.add_rmsnorm_ignores_storage_reuse", "fp32", TEST,
           "(y, h) memoised by the inputs' data_ptr"),
    # the magnitudes real models reach
    _entry("swiglu_sigmoid_overflow", "SwiGLU.swiglu_matches_golden_at_real_magnitudes", "fp32", TEST,
           "σ(z) as exp(z)/(1+exp(z)): NaN past z = 88.7"),
    _entry("rmsnorm_squares_in_fp16", "RMSNorm.rmsnorm_matches_golden_at_real_magnitudes", "bf16", TEST,
           "bf16 x squared in fp16: zeros past |x| = 256"),
    _entry("add_norm_squares_in_fp16", "AddRMSNorm.add_rmsnorm_matches_golden_at_real_magnitudes", "bf16", TEST,
           "bf16 h squared in fp16: zeros past |h| = 256"),
    _entry("block_norm_squares_in_fp16", "Block.block_matches_golden_at_real_magnitudes", "bf16", TEST,
           "the norms square bf16 x in fp16: zeros past 256"),
    _entry("attention_running_max_sentinel", "Block.block_matches_golden", "fp32", TEST,
           "softmax running max starts at −10⁴: NaN at logits −10⁵"),
    _entry("attention_backward_logits_in_bf16", "Block.block_jacobian_is_identity_plus_branch", "fp32", TEST,
           "flash backward recomputes q·kᵀ in bf16"),
    # module lifecycle: deepcopy, pickle, state_dict, .to, to_empty
    _entry("rmsnorm_eps_buffer_not_persistent", "RMSNorm.rmsnorm_survives_copies_moves_and_to_empty", "fp32", TEST,
           "eps in a non-persistent buffer: garbage after to_empty"),
    _entry("swiglu_projection_bound_at_init", "SwiGLU.swiglu_survives_copies_moves_and_to_empty", "fp32", TEST,
           "gate/up bound in a closure: a deepcopy reads the original"),
    _entry("rope_inv_freq_not_persistent", "Block.block_survives_copies_moves_and_to_empty", "fp32", TEST,
           "RoPE inv_freq non-persistent: garbage after to_empty"),
    _entry("add_norm_eps_buffer_not_persistent", "AddRMSNorm.add_rmsnorm_survives_copies_moves_and_to_empty", "fp32",
           TEST, "eps in a non-persistent buffer: garbage after to_empty"),
    _entry("add_norm_eps_per_class", "AddRMSNorm.add_rmsnorm_follows_its_module_lifecycle", "fp32", TEST,
           "eps baked into a kernel cached per class by (D, dtype)"),
    # Written as Triton kernels (triton_rmsnorm: the correct skeleton); run by Triton's interpreter without CUDA.
    _entry("triton_tail_mask_off_by_one", "RMSNorm.rmsnorm_matches_golden", "fp32", TEST,
           "Triton: the tail mask one column short", requires="triton"),
    _entry("triton_grid_rows_capped", "RMSNorm.rmsnorm_matches_golden_at_code_path_sizes", "fp32", REAL,
           "Triton: the launch covers at most 65,535 rows", requires="triton"),
    _entry("triton_neighbour_row", "RMSNorm.rmsnorm_matches_golden", "fp32", TEST,
           "Triton: a program reads row·BLOCK (its neighbour's row)", requires="triton"),
    _entry("triton_input_dtype_accumulator", "RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded", "bf16", TEST,
           "Triton: Σx² accumulated in a bf16 tl.zeros", requires="triton"),
    _entry("triton_backward_saves_output", "RMSNorm.rmsnorm_gradients_match_golden", "fp32", TEST,
           "Triton: the backward kernel reads the saved y as x", requires="triton"),
])
# fmt: on
