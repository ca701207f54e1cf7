"""Numerical cases shared by several test folders (numerics/, running/): rows whose rounding errors correlate,
a Block with drawn weights, and HF-Llama's RMSNorm verbatim (its two roundings: an accepted convention)."""

from __future__ import annotations

import math

import numpy as np
import torch

import nanolm_core
from nanolm_core import ModelConfig

__all__ = ["adversarial_rows", "block_case", "exact_in", "hf_llama_rmsnorm"]


def exact_in(a: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """``a`` rounded to ``dtype`` (round to nearest even), as float64: values exact in ``dtype``."""
    return torch.from_numpy(np.asarray(a, dtype=np.float64)).to(dtype).double().numpy()


def adversarial_rows(D: int, dtype: torch.dtype, seed: int = 0) -> np.ndarray:
    """Rows whose rounding errors correlate (constant, same sign, a ramp) or that stress the range (one outlier,
    mixed scales), exact in ``dtype``: (9, D)."""
    rng = np.random.default_rng(seed + D)
    const = exact_in(rng.uniform(0.5, 2.0, 2), dtype)  # full-mantissa constants
    rows = [
        np.full(D, const[0]),
        np.full(D, -const[1]),
        np.abs(rng.standard_normal(D)) + 0.05,  # one sign
        np.linspace(1.0, 2.0, D),  # a ramp: partial sums grow steadily
        np.where(np.arange(D) == D // 2, 100.0, 1e-3 * np.abs(rng.standard_normal(D))),  # one outlier
        np.where(np.arange(D) % 2 == 0, 1.0, 2.0**-10) * (1 + rng.random(D)),  # mixed scales
        2.0 ** rng.uniform(-8, 8, D),  # log-uniform magnitudes
        rng.standard_normal(D) + 3.0,  # non-zero mean
        rng.standard_normal(D),
    ]
    return exact_in(np.stack(rows), dtype)


def hf_llama_rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """HF LlamaRMSNorm.forward verbatim: compute in fp32, round x·r to the input dtype, then × w in that dtype."""
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def block_case(dtype: torch.dtype, D: int, H: int, G: int, T: int, scale: float, seed: int):
    """(the reference Block with drawn weights — norms' gains near 1, linears scaled by 1/√fan-in —, its config,
    an input of shape (2, T, D) with non-zero mean), all in ``dtype``."""
    torch.manual_seed(seed)
    cfg = ModelConfig(dim=D, n_heads=H, n_kv_heads=G)
    blk = nanolm_core.Block(cfg)
    with torch.no_grad():
        for name, p in blk.named_parameters():
            p.copy_(1 + 0.5 * torch.randn_like(p) if "norm" in name else torch.randn_like(p) / math.sqrt(p.shape[1]))
    blk = blk.to(dtype)
    x = (torch.randn(2, T, D) * scale + 0.2 * scale).to(dtype)
    return blk, cfg, x
