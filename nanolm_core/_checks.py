"""Input validation shared by the core modules: every message names the problem and the value."""

from __future__ import annotations

import torch

FLOAT_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def check_features(
    x: torch.Tensor, dim: int, who: str, weight: torch.Tensor | None = None, same_dtype: bool = False
) -> None:
    """x must be a floating tensor of shape (..., dim) on ``weight``'s device (and dtype, if asked)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{who}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{who}: dtype {x.dtype} is not supported; use float64, float32, float16 or bfloat16")
    if x.dim() == 0 or x.shape[-1] != dim:
        raise ValueError(f"{who}: last dimension of input shape {tuple(x.shape)} must be dim={dim}")
    if weight is not None and weight.device != x.device:
        raise ValueError(f"{who}: input is on {x.device} but the weights are on {weight.device}; move one with .to()")
    if same_dtype and weight is not None and weight.dtype != x.dtype:
        raise TypeError(f"{who}: input dtype {x.dtype} differs from the weights' {weight.dtype}; use module.to(dtype)")


def upcast_dtype(dtype: torch.dtype) -> torch.dtype:
    """Compute precision of the reference: fp64 stays fp64, everything else is computed in fp32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def check_sequence(x: torch.Tensor, dim: int, max_seq_len: int, who: str, weight: torch.Tensor) -> None:
    """x must be (B, T, dim) with T ≤ max_seq_len, floating, on ``weight``'s device and dtype."""
    check_features(x, dim, who, weight, same_dtype=True)
    if x.dim() != 3:
        raise ValueError(f"{who}: input must have rank 3 (B, T, D), got shape {tuple(x.shape)}")
    if x.shape[1] > max_seq_len:
        raise ValueError(f"{who}: sequence length T={x.shape[1]} exceeds max_seq_len={max_seq_len}")
