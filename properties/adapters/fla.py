"""Adapter ``fla``: flash-linear-attention's Triton norm and SwiGLU kernels (``fla-core``) wrapped to the contract.

- RMSNorm: ``fla.modules.RMSNorm(dim, eps)`` — fla's fused layer-norm kernel with ``IS_RMS_NORM``: x loaded into
  fp32, rstd = 1 / sqrt(mean(x²) + eps), y = x·rstd·w in fp32, rounded once to the input dtype.
- SwiGLU: ``fla.modules.GatedMLP(dim, intermediate_size=hidden_dim, hidden_act="swish", fuse_swiglu=True)``:
  gate and up by ``nn.Linear``; ``swiglu_linear`` fuses silu(gate)·up (a Triton kernel, fp32 inside, rounded to the
  input dtype) with the down projection (``F.linear``).
- AddRMSNorm: the same ``RMSNorm`` called with ``residual=r, prenorm=True`` → (y, h): h = x + r summed in fp32 and
  stored in the input dtype; the norm reads the fp32 sum (unrounded).
- Block: not provided (fla's layers are linear-attention blocks, not the contract's softmax attention).

Its kernels are Triton: compiled on CUDA, interpreted in the workers elsewhere (``properties.running.interpreted``).
``fla`` is imported lazily (when a component is constructed), so importing this module never fails.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import torch

import nanolm_core
from properties.adapters import call_with, hide
from properties.adapters.hf import LLAMA_MLP
from properties.adapters.kit import library_params

__all__ = ["CONVENTIONS", "SKIP_REASON", "TRITON_KERNELS", "AddRMSNorm", "RMSNorm", "SwiGLU", "skip_reason"]

TRITON_KERNELS = True  # interpreted in the workers where there is no CUDA device

CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = fl(x · rstd · w), rstd = 1 / sqrt(mean(x²) + eps)",
        "rounding": "x, w loaded into fp32; everything in fp32; one rounding to the input dtype",
        "compute": "fp32 inside the Triton kernel (fp64 inputs too)",
        "compute_dtype": "fp32",
        "accumulation_dtype": "fp32",
        "roundings": 1,
        "eps_default": 1e-5,
        "eps_placement": "inside",
        "weight_mapping": "identity (fla.modules.RMSNorm.weight)",
        "backward": "one Triton kernel: dx and per-program partial dw, summed by torch",
        "source": "fla.modules.norm.layernorm.RMSNorm (fla-core)",
    },
    "SwiGLU": {
        "formula": "y = down_proj(silu(gate_proj(x)) ⊙ up_proj(x))",
        "rounding": "linears in the module dtype; silu(gate)·up in fp32 inside the kernel, rounded once to the "
        "input dtype, then F.linear",
        "compute": "module dtype, fp32 inside the swiglu kernel (fp64 inputs too: silu(gate)·up has fp32 accuracy)",
        "compute_dtype": {"fp64": "fp32"},
        "weight_mapping": "w_gate ↔ gate_proj, w_up ↔ up_proj, w_down ↔ down_proj",
        "backward": "the swiglu backward recomputes silu(gate)·up (recompute_output) for the down projection's dW",
        "source": "fla.modules.mlp.GatedMLP(fuse_swiglu=True) (fla-core)",
    },
    "AddRMSNorm": {
        "formula": "s = x + r (fp32); h = fl(s); y = fl(s · rsqrt(mean(s²) + eps) · w)",
        "rounding": "the sum in fp32, stored rounded as h; the norm reads the unrounded fp32 sum; one rounding of y",
        "compute": "fp32 inside the Triton kernel",
        "compute_dtype": "fp32",
        "accumulation_dtype": "fp32",
        "norm_input": "sum",
        "roundings": 1,
        "eps_placement": "inside",
        "weight_mapping": "identity; x ↔ x, residual ↔ residual (prenorm=True returns (y, residual_out))",
        "backward": "the backward reads the stored h (rounded), not the fp32 sum the forward normalized; it returns "
        "one tensor as the gradient of x and of residual (x.grad and residual.grad share storage: docs/league.md)",
        "source": "fla.modules.norm.layernorm.RMSNorm(residual=…, prenorm=True) (fla-core)",
    },
}


def skip_reason() -> str | None:
    """Why fla cannot run here (None when it can): not installed, or neither CUDA nor Triton's interpreter."""
    if importlib.util.find_spec("fla") is None:
        return "fla-core is not installed (pip install 'nanolm-verify[triton]')"
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return "fla's Triton kernels need a CUDA device or Triton's interpreter (--triton interpret)"
    return None


SKIP_REASON = skip_reason()


def _require() -> Any:
    reason = skip_reason()
    if reason is not None:
        raise RuntimeError(f"fla adapter unavailable: {reason}")
    import fla.modules

    return fla.modules


class RMSNorm(nanolm_core.RMSNorm):
    """``fla.modules.RMSNorm``: y = fl(x · rsqrt(mean(x²) + eps) · w), fp32 inside, one rounding."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        fm = _require()
        super().__init__(dim, eps)
        with torch.device("meta"):
            hide(self, "_fla", fm.RMSNorm(dim, eps=eps))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._fla, {"weight": self.weight}, x)


class SwiGLU(nanolm_core.SwiGLU):
    """``fla.modules.GatedMLP`` (fused swiglu + down projection) on contract-named weights."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        fm = _require()
        super().__init__(dim, hidden_dim)
        with torch.device("meta"):
            hide(self, "_fla", fm.GatedMLP(dim, intermediate_size=hidden_dim, hidden_act="swish", fuse_swiglu=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._fla, library_params(self, LLAMA_MLP), x)


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """``fla.modules.RMSNorm(x, residual=r, prenorm=True)`` → (y, h): the norm reads the fp32 sum."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        fm = _require()
        super().__init__(dim, eps)
        with torch.device("meta"):
            hide(self, "_fla", fm.RMSNorm(dim, eps=eps))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = call_with(self._fla, {"weight": self.weight}, x, residual=residual, prenorm=True)
        return y, h
