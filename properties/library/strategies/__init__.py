"""Hypothesis strategies for the laws: dtypes, exact low-precision values, shapes, rows by regime, weights, configs.

Every value is drawn *exactly representable* in the dtype under test, so the value Hypothesis shrinks to is
the value the implementation sees (no float32-then-cast). Small rows are drawn element by element from
bit patterns (sign, binade, mantissa), so they shrink element-wise; rows wider than ``ELEMENTWISE_MAX_D``
take their bulk from a drawn 64-bit seed (fast) and their structure (scale, mean, outlier, zero / constant
rows) from separate draws. Magnitudes are bounded on purpose: row scales 2^-14 … 2^13 (≈ 6e-5 … 8e3; the
fp16 upper end keeps |x| ≤ 4·2^13 < 65504 while x² overflows fp16 above 256).
Composite strategies return small NamedTuples.

The package holds them by what they are (import the names from the package: ``from properties.library import
strategies as S``; every name below is re-exported):

    values       dtypes, exact floats, dims and batch shapes, eps, rows by regime, gains γ, linear weights, cotangents
    rmsnorm      RMSNorm's cases (plain, scaled by 2^k, one row kept, with a cotangent, at the overflow threshold)
    swiglu       SwiGLU's cases (plain, one token kept, with a cotangent)
    block        configs, the Block's state_dict and cases (plain, causal, sharp, 80 rows, one token), long-sequence
                 query positions
    add_rmsnorm  AddRMSNorm's cases (stream and branch, with cotangents, with IEEE corners of the sum)
    layouts      the memory layouts of an input or a weight (views a real caller hands a kernel)
    pins         ``Pin``, ``pinned`` and the pinned cases every profile runs (corner rows, model widths, many rows,
                 long sequences, extreme logits, the 16-bit backward, the call-protocol cases, the reach and
                 overflow-threshold pins)
    code_paths   the enumerated sizes where a kernel switches code path (``PATHS``), ``sampled_rows``

A new component's strategies go in a module of its own, named after it; a value every component draws, in
``values``; a pinned case, in ``pins``; a law's own cases here too, never in its law module.
"""

from __future__ import annotations

from properties.library.strategies.add_rmsnorm import (
    BRANCH_KINDS,
    AddGradCase,
    AddRMSNormCase,
    add_rmsnorm_cases,
    add_rmsnorm_grad_cases,
    add_rmsnorm_sum_cases,
    sum_corners,
)
from properties.library.strategies.block import (
    GRAD_ROWS,
    BlockCase,
    CausalCase,
    ParamGradCase,
    ReachCase,
    SharpBlockCase,
    block_cases,
    block_params,
    causal_cases,
    configs,
    fixed_config,
    long_positions,
    one_token,
    param_grad_case,
    param_grad_cases,
    reach_cases,
    sharp_block_cases,
)
from properties.library.strategies.code_paths import GRID_LIMIT, PATHS, PathCase, sampled_rows
from properties.library.strategies.layouts import LAYOUTS, as_layout, weight_as_layout
from properties.library.strategies.pins import (
    ADD_RMSNORM_PINS,
    BACKWARD_PINS,
    BACKWARD_T,
    BLOCK_PINS,
    CAUSAL_PINS,
    DOMAIN_PINS,
    EXTREME_LOGIT,
    GRAD_PINS,
    HIDDEN_PINS,
    LOGIT_PINS,
    LONG_T,
    LONGEST_T,
    MANY_ROWS,
    MODEL_HIDDEN,
    MODEL_WIDTHS,
    PARAM_GRAD_PINS,
    PROTOCOL_PINS,
    REACH_PINS,
    RMSNORM_PINS,
    ROW_PINS,
    SHARP_BLOCK_PINS,
    SWIGLU_PINS,
    WIDTH_PINS,
    WIDTH_ROW_PINS,
    Pin,
    long_block_case,
    pinned,
)
from properties.library.strategies.rmsnorm import (
    BELOW,
    BEYOND,
    DomainCase,
    RMSNormCase,
    RowCase,
    ScaledCase,
    domain_cases,
    overflow_threshold,
    reaches_threshold,
    rmsnorm_cases,
    rmsnorm_grad_cases,
    row_cases,
    rows_at_threshold,
    scaled_rmsnorm_cases,
)
from properties.library.strategies.swiglu import (
    SWIGLU_ROW_KINDS,
    SwiGLUCase,
    TokenCase,
    swiglu_cases,
    swiglu_grad_cases,
    swiglu_token_cases,
)
from properties.library.strategies.values import (
    COTANGENT_KINDS,
    ELEMENTWISE_MAX_D,
    FAST_DIMS,
    GAMMA_KINDS,
    ROW_KINDS,
    SLOW_DIMS,
    Gamma,
    GradCase,
    Rows,
    all_finite_values,
    batch_shapes,
    cotangent,
    cotangents_of_kind,
    dims,
    dtypes,
    eps_values,
    exact_floats,
    gammas,
    linear_weight,
    rows,
    to_dtype_exact,
)

__all__ = [
    "ADD_RMSNORM_PINS",
    "BACKWARD_PINS",
    "BACKWARD_T",
    "BELOW",
    "BEYOND",
    "BLOCK_PINS",
    "BRANCH_KINDS",
    "CAUSAL_PINS",
    "COTANGENT_KINDS",
    "DOMAIN_PINS",
    "ELEMENTWISE_MAX_D",
    "EXTREME_LOGIT",
    "FAST_DIMS",
    "GAMMA_KINDS",
    "GRAD_PINS",
    "GRAD_ROWS",
    "GRID_LIMIT",
    "HIDDEN_PINS",
    "LAYOUTS",
    "LOGIT_PINS",
    "LONGEST_T",
    "LONG_T",
    "MANY_ROWS",
    "MODEL_HIDDEN",
    "MODEL_WIDTHS",
    "PARAM_GRAD_PINS",
    "PATHS",
    "PROTOCOL_PINS",
    "REACH_PINS",
    "RMSNORM_PINS",
    "ROW_KINDS",
    "ROW_PINS",
    "SHARP_BLOCK_PINS",
    "SLOW_DIMS",
    "SWIGLU_PINS",
    "SWIGLU_ROW_KINDS",
    "WIDTH_PINS",
    "WIDTH_ROW_PINS",
    "AddGradCase",
    "AddRMSNormCase",
    "BlockCase",
    "CausalCase",
    "DomainCase",
    "Gamma",
    "GradCase",
    "ParamGradCase",
    "PathCase",
    "Pin",
    "RMSNormCase",
    "ReachCase",
    "RowCase",
    "Rows",
    "ScaledCase",
    "SharpBlockCase",
    "SwiGLUCase",
    "TokenCase",
    "add_rmsnorm_cases",
    "add_rmsnorm_grad_cases",
    "add_rmsnorm_sum_cases",
    "all_finite_values",
    "as_layout",
    "batch_shapes",
    "block_cases",
    "block_params",
    "causal_cases",
    "configs",
    "cotangent",
    "cotangents_of_kind",
    "dims",
    "domain_cases",
    "dtypes",
    "eps_values",
    "exact_floats",
    "fixed_config",
    "gammas",
    "linear_weight",
    "long_block_case",
    "long_positions",
    "one_token",
    "overflow_threshold",
    "param_grad_case",
    "param_grad_cases",
    "pinned",
    "reach_cases",
    "reaches_threshold",
    "rmsnorm_cases",
    "rmsnorm_grad_cases",
    "row_cases",
    "rows",
    "rows_at_threshold",
    "sampled_rows",
    "scaled_rmsnorm_cases",
    "sharp_block_cases",
    "sum_corners",
    "swiglu_cases",
    "swiglu_grad_cases",
    "swiglu_token_cases",
    "to_dtype_exact",
    "weight_as_layout",
]
