"""Adapter ``timm``: PyTorch Image Models' ``RmsNorm`` and ``SwiGLU`` layers wrapped to the contract (optional).

- RMSNorm: ``timm.layers.RmsNorm(dim, eps)`` (parameter ``weight``). Without apex it runs ``timm.layers.fast_norm.
  rms_norm``: x², their mean, + eps, rsqrt, ·x and ·w, every step in the *input* dtype (no upcast).
- SwiGLU: ``timm.layers.SwiGLU(dim, hidden, bias=False)``: ``fc1_g`` / ``fc1_x`` / ``fc2`` ↔ ``w_gate`` / ``w_up`` /
  ``w_down``, fc2(silu(fc1_g(x)) ⊙ fc1_x(x)) in the module dtype (its optional norm is off, dropout 0).
- Block: not provided (timm's transformer blocks are ViT blocks: LayerNorm, no RoPE, no causal mask).

``import timm`` imports torchvision (``timm.layers.create_norm``). The torchvision wheel that pip resolves next to
the CPU build of torch pinned by ``constraints/cpu.txt`` does not import beside it, so timm is not part of the
``test`` extra; install it where torch and torchvision come as a matching pair (``pip install
'nanolm-verify[timm]'`` on such a machine). Wherever timm cannot be imported, ``SKIP_REASON`` says why and every
law is skipped with that reason.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import torch

import nanolm_core
from properties.adapters import call_with, hide
from properties.adapters.kit import library_params

__all__ = ["CONVENTIONS", "SKIP_REASON", "RMSNorm", "SwiGLU", "skip_reason"]

MLP_NAMES = {"fc1_g.weight": "w_gate.weight", "fc1_x.weight": "w_up.weight", "fc2.weight": "w_down.weight"}
CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = x · rsqrt(mean(x²) + eps) · w",
        "rounding": "every step rounds to the input dtype: x², mean, + eps, rsqrt, ·x, ·w",
        "compute": "the input dtype throughout (no upcast of fp16/bf16)",
        "compute_dtype": "input",
        "eps_dtype": "input",
        "eps_default": 1e-6,
        "eps_placement": "inside",
        "weight_offset": 0.0,
        "weight_mapping": "identity (RmsNorm.weight)",
        "source": "timm.layers.RmsNorm → timm.layers.fast_norm.rms_norm",
    },
    "SwiGLU": {
        "formula": "y = fc2(silu(fc1_g(x)) ⊙ fc1_x(x))",
        "rounding": "module dtype: each linear, silu and the product round to the input dtype",
        "compute": "module dtype",
        "compute_dtype": "input",
        "weight_mapping": "w_gate ↔ fc1_g, w_up ↔ fc1_x, w_down ↔ fc2",
        "source": "timm.layers.SwiGLU(bias=False, norm_layer=None)",
    },
}


def skip_reason() -> str | None:
    """Why timm cannot run here (None when it can): not installed, or not importable (its torchvision)."""
    if importlib.util.find_spec("timm") is None:
        return "timm is not installed (pip install 'nanolm-verify[timm]' where torch and torchvision match)"
    try:
        importlib.import_module("timm.layers")
    except Exception as exc:  # torchvision built for another torch: "operator torchvision::nms does not exist"
        why = f"{type(exc).__name__}: {str(exc)[:120]}"
        return f"timm cannot be imported here ({why}); it needs a torchvision built for this torch"
    return None


SKIP_REASON = skip_reason()


def _layers() -> Any:
    if SKIP_REASON is not None:
        raise RuntimeError(f"timm adapter unavailable: {SKIP_REASON}")
    return importlib.import_module("timm.layers")


class RMSNorm(nanolm_core.RMSNorm):
    """``timm.layers.RmsNorm`` on the contract's gain: y = x · rsqrt(mean(x²) + eps) · w, all in the input dtype."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        layers = _layers()
        super().__init__(dim, eps)
        with torch.device("meta"):
            hide(self, "_timm", layers.RmsNorm(dim, eps=eps))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._timm, {"weight": self.weight}, x)


class SwiGLU(nanolm_core.SwiGLU):
    """``timm.layers.SwiGLU`` (bias-free) on contract-named weights: y = W_down (silu(W_gate x) ⊙ W_up x)."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        layers = _layers()
        super().__init__(dim, hidden_dim)
        with torch.device("meta"):
            hide(self, "_timm", layers.SwiGLU(dim, hidden_dim, dim, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._timm, library_params(self, MLP_NAMES), x)
