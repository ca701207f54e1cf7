"""Adapter ``timm``: PyTorch Image Models' ``RmsNorm`` and ``SwiGLU`` layers wrapped to the contract (optional).

- RMSNorm: ``timm.layers.RmsNorm(dim, eps)`` (parameter ``weight``). Without apex it runs ``timm.layers.fast_norm.
  rms_norm``: x², their mean, + eps, rsqrt, ·x and ·w, every step in the *input* dtype (no upcast).
- SwiGLU: ``timm.layers.SwiGLU(dim, hidden, bias=False)``: ``fc1_g`` / ``fc1_x`` / ``fc2`` ↔ ``w_gate`` / ``w_up`` /
  ``w_down``, fc2(silu(fc1_g(x)) ⊙ fc1_x(x)) in the module dtype (its optional norm is off, dropout 0).
- Block: not provided (timm's transformer blocks are ViT blocks: LayerNorm, no RoPE, no causal mask).

``import timm`` imports torchvision (``timm.layers.create_norm``), and the torchvision wheel that pip resolves next
to the CPU build of torch pinned by ``constraints/cpu.txt`` does not import beside it. The adapter therefore imports
only timm's ``layers/norm.py`` and ``layers/mlp.py`` (and the layer files they import), never ``timm`` itself: they
need torch alone. Wherever even those cannot be imported, ``SKIP_REASON`` says why and every law is skipped with
that reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path
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


_PRIVATE = "_nanolm_timm_layers"  # timm/layers/ as a package of our own: its __init__ (and timm's) never runs


def _layer_modules() -> tuple[Any, Any]:
    """(timm's ``layers/norm.py``, its ``layers/mlp.py``) imported on their own: ``import timm`` runs timm's and
    timm.layers' ``__init__``, which import torchvision (``create_norm``) — a torchvision that does not match this
    torch breaks every law of the adapter, though the norm and the MLP need only torch. Their relative imports
    (``.fast_norm``, ``.create_act`` …) resolve inside the same private package, never through ``timm``."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("timm is not installed")
    layers = Path(next(iter(spec.submodule_search_locations))) / "layers"
    if _PRIVATE not in sys.modules:
        package = types.ModuleType(_PRIVATE)
        package.__path__ = [str(layers)]  # a namespace for the layer files: no __init__ executed
        sys.modules[_PRIVATE] = package
    return importlib.import_module(f"{_PRIVATE}.norm"), importlib.import_module(f"{_PRIVATE}.mlp")


def skip_reason() -> str | None:
    """Why timm's norm and MLP cannot run here (None when they can): not installed, or not importable."""
    if importlib.util.find_spec("timm") is None:
        return "timm is not installed (pip install 'nanolm-verify[timm]')"
    try:
        _layer_modules()
    except Exception as exc:
        why = f"{type(exc).__name__}: {str(exc)[:120]}"
        return f"timm's layers/norm.py and layers/mlp.py cannot be imported here ({why})"
    return None


SKIP_REASON = skip_reason()


def _layers() -> Any:
    """A namespace with ``RmsNorm`` and ``SwiGLU`` from timm's layer files (:func:`_layer_modules`)."""
    if SKIP_REASON is not None:
        raise RuntimeError(f"timm adapter unavailable: {SKIP_REASON}")
    norm, mlp = _layer_modules()
    return types.SimpleNamespace(RmsNorm=norm.RmsNorm, SwiGLU=mlp.SwiGLU)


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
