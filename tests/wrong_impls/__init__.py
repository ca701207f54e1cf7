"""Proof of power: small wrong implementations, each caught by the law named in CAUGHT_BY (ci profile).

Each module defines only the component it gets wrong (the others are "not provided"), overriding one
thing of the reference. ``CAUGHT_BY[module] = (law id, dtype name)``.
"""

CAUGHT_BY: dict[str, tuple[str, str]] = {
    # RMSNorm
    "eps_outside_sqrt": ("RMSNorm.rmsnorm_matches_golden", "fp32"),
    "norm_without_mean": ("RMSNorm.rmsnorm_output_has_norm_sqrt_d", "fp32"),
    "abs_of_x": ("RMSNorm.rmsnorm_preserves_sign", "fp32"),
    "fp16_square_overflow": ("RMSNorm.rmsnorm_is_scale_invariant", "fp16"),
    "forgot_gamma": ("RMSNorm.rmsnorm_scales_with_gamma", "fp32"),
    "mean_subtraction": ("RMSNorm.rmsnorm_does_not_center", "fp32"),
    "whole_tensor_norm": ("RMSNorm.rmsnorm_rows_are_independent", "fp32"),
    "batch_variant": ("RMSNorm.rmsnorm_is_batch_invariant", "fp32"),
    "fp32_output": ("RMSNorm.rmsnorm_preserves_shape_dtype_device", "bf16"),
    "inplace_rmsnorm": ("RMSNorm.rmsnorm_does_not_modify_input", "fp32"),
    "missing_eps": ("RMSNorm.rmsnorm_maps_zero_row_to_zeros", "fp32"),
    "global_max_rescale": ("RMSNorm.rmsnorm_confines_nonfinite_to_row", "fp32"),
    "bf16_accumulation": ("RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded", "bf16"),
    "rmsnorm_radial_backward": ("RMSNorm.rmsnorm_gradients_match_golden", "bf16"),
    "rmsnorm_weight_backward": ("RMSNorm.rmsnorm_gradients_pass_gradcheck", "fp64"),
    # SwiGLU
    "swapped_gate_up": ("SwiGLU.swiglu_matches_golden", "fp32"),
    "swiglu_offset": ("SwiGLU.swiglu_maps_zero_to_zero", "fp32"),
    "silu_cancellation": ("SwiGLU.swiglu_is_elementwise_silu_gate", "bf16"),
    "hidden_position_scale": ("SwiGLU.swiglu_is_invariant_to_hidden_permutation", "fp32"),
    "token_mixing": ("SwiGLU.swiglu_tokens_are_independent", "fp32"),
    "leaky_output": ("SwiGLU.swiglu_is_linear_in_w_down", "fp32"),
    "swiglu_fp32_output": ("SwiGLU.swiglu_preserves_shape_dtype_device", "bf16"),
    "inplace_swiglu": ("SwiGLU.swiglu_does_not_modify_input", "fp32"),
    "bf16_truncated_hidden": ("SwiGLU.swiglu_bf16_drift_from_fp32_is_bounded", "bf16"),
    "silu_backward_sigmoid": ("SwiGLU.swiglu_gradients_match_golden", "fp32"),
    "swiglu_up_backward": ("SwiGLU.swiglu_gradients_pass_gradcheck", "fp64"),
    "swiglu_bias": ("SwiGLU.swiglu_has_three_matrices_of_ffn_dim", "fp32"),
    # Block
    "missing_attention_scale": ("Block.block_matches_golden", "fp32"),
    "normalized_residual": ("Block.block_is_identity_when_branches_are_zeroed", "fp32"),
    "detached_branch_input": ("Block.block_jacobian_is_identity_plus_branch", "fp32"),
    "non_causal": ("Block.block_is_causal", "fp32"),
    "block_fp32_output": ("Block.block_preserves_shape_dtype_device", "bf16"),
    "inplace_residual": ("Block.block_does_not_modify_input", "fp32"),
    "detached_attention_input": ("Block.block_gradients_pass_gradcheck", "fp64"),
    "post_norm": ("Block.block_preserves_gradient_through_depth", "fp32"),
    "ffn_4d": ("Block.block_has_llama_parameter_count", "fp32"),
    "ffn_4d_default": ("Block.block_ffn_dim_is_8d_over_3", "fp32"),
}
