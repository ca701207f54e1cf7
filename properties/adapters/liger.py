"""Adapter ``liger``: LinkedIn's Liger Triton kernels wrapped to the contract (CUDA only).

- RMSNorm: ``LigerRMSNorm(dim, eps, offset=0.0, casting_mode="llama")``.
- SwiGLU: ``LigerSwiGLUMLP`` (fused ``silu(gate) ⊙ up`` kernel) on contract-named weights.
- AddRMSNorm: ``LigerFusedAddRMSNorm(dim, eps, offset=0.0, casting_mode="llama", in_place=False)`` — (y, h) from one
  kernel: h = x + r in the input dtype, the norm reads that rounded h. Added to Liger in 2025 (linkedin/Liger-Kernel
  pull request 812); with an older installed version the component's laws are skipped as "not implemented".
- Block: not provided (Liger patches whole HF models, it has no decoder layer of its own).

Liger's kernels are Triton: compiled on a CUDA device, interpreted elsewhere (Triton's interpreter in the workers,
``properties.running.interpreted``: ``--triton auto``, the default). ``liger_kernel`` itself is imported lazily
(only when a component is constructed), so importing this module never fails: without the package, ``SKIP_REASON``
says why and every law is skipped with that reason.
"""

from __future__ import annotations

import importlib.util
import os
import types
from typing import Any

import torch

import nanolm_core
from properties.adapters import call_with, hide
from properties.adapters.hf import LLAMA_MLP
from properties.adapters.kit import library_params

__all__ = ["CONVENTIONS", "SKIP_REASON", "TRITON_KERNELS", "AddRMSNorm", "RMSNorm", "SwiGLU", "skip_reason"]

TRITON_KERNELS = True  # its kernels are Triton: interpreted in the workers where there is no CUDA device

CASTING_MODE = "llama"

CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = w · fl(x · rsqrt(mean(x²) + eps))",
        "rounding": f"casting_mode={CASTING_MODE!r}: rstd in fp32, x·rstd rounded to the input dtype, then ·w "
        "(two roundings, as HF Llama)",
        "compute": "fp32 reduction inside the Triton kernel",
        "compute_dtype": "fp32",
        "accumulation_dtype": "fp32",
        "roundings": 2,
        "eps_default": 1e-6,
        "eps_placement": "inside",
        "weight_offset": 0.0,
        "weight_mapping": "identity (LigerRMSNorm.weight)",
        "backward": "built with in_place=False: the library's default, in_place=True, writes dX into the caller's "
        "grad_output (docs/league.md, bench/triton_findings.py), so the laws would judge a cotangent the kernel "
        "overwrote; no fp64 backward (torch_to_triton_dtype has fp32, fp16, bf16 only: KeyError)",
        "source": "liger_kernel.transformers.rms_norm.LigerRMSNorm",
    },
    "SwiGLU": {
        "formula": "y = down_proj(silu(gate_proj(x)) ⊙ up_proj(x))",
        "rounding": "linears in the module dtype; the fused kernel computes silu(gate) in fp32, rounds it to the "
        "input dtype and multiplies by up (two roundings)",
        "compute": "module dtype, fp32 inside the silu·mul kernel (fp64 inputs too: silu(gate) has fp32 accuracy)",
        "compute_dtype": {"fp64": "fp32"},
        "backward": "the silu·mul backward writes d(gate) and d(up) into the saved activations' storage (memory "
        "saving, by design): a second backward through the same graph reads gradients where the activations were "
        "(not reentrant: fp64 gradcheck's reentrancy check fails)",
        "weight_mapping": "w_gate ↔ gate_proj, w_up ↔ up_proj, w_down ↔ down_proj",
        "source": "liger_kernel.transformers.swiglu.LigerSwiGLUMLP",
    },
    "AddRMSNorm": {
        "formula": "h = fl(x + r); y = w · fl(h · rsqrt(mean(h²) + eps))",
        "rounding": f"casting_mode={CASTING_MODE!r}: h rounded to the input dtype, read by the norm; x·rstd rounded, "
        "then ·w (two roundings, as its RMSNorm)",
        "compute": "fp32 reduction inside the Triton kernel",
        "compute_dtype": "fp32",
        "accumulation_dtype": "fp32",
        "norm_input": "rounded",
        "roundings": 2,
        "eps_placement": "inside",
        "weight_mapping": "identity (LigerFusedAddRMSNorm.weight); x ↔ hidden_states, residual ↔ residual",
        "backward": "one Triton kernel: dX = dR (the same buffer), dS_out added",
        "source": "liger_kernel.transformers.fused_add_rms_norm.LigerFusedAddRMSNorm",
    },
}


def skip_reason() -> str | None:
    """Why Liger cannot run here (None when it can): the package is missing, or there is neither a CUDA device nor
    Triton's interpreter (``TRITON_INTERPRET=1``, which the suite sets in its workers: ``--triton``)."""
    if importlib.util.find_spec("liger_kernel") is None:
        return "liger-kernel is not installed (pip install 'nanolm-verify[triton]')"
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return "liger-kernel's Triton kernels need a CUDA device or Triton's interpreter (--triton interpret)"
    return None


SKIP_REASON = skip_reason()


def _require() -> Any:
    reason = skip_reason()
    if reason is not None:
        raise RuntimeError(f"liger adapter unavailable: {reason}")
    import liger_kernel.transformers as lk

    return lk


class RMSNorm(nanolm_core.RMSNorm):
    """``LigerRMSNorm``: y = w · fl(x · rsqrt(mean(x²) + eps)), casting mode "llama" (two roundings); built with
    ``in_place=False`` (the default writes dX into the caller's grad_output: a finding, docs/league.md)."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        lk = _require()
        super().__init__(dim, eps)
        with torch.device("meta"):
            hide(self, "_liger", lk.LigerRMSNorm(dim, eps=eps, offset=0.0, casting_mode=CASTING_MODE, in_place=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._liger, {"weight": self.weight}, x)


class SwiGLU(nanolm_core.SwiGLU):
    """``LigerSwiGLUMLP`` on contract-named weights: y = W_down (silu(W_gate x) ⊙ W_up x)."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        lk = _require()
        super().__init__(dim, hidden_dim)
        cfg = types.SimpleNamespace(hidden_size=dim, intermediate_size=hidden_dim, hidden_act="silu")
        with torch.device("meta"):
            hide(self, "_liger", lk.LigerSwiGLUMLP(cfg))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return call_with(self._liger, library_params(self, LLAMA_MLP), x)


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """``LigerFusedAddRMSNorm``: h = x + r, y = w · fl(h · rsqrt(mean(h²) + eps)) (casting mode "llama")."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        lk = _require()
        fused = getattr(lk, "LigerFusedAddRMSNorm", None)
        if fused is None:  # skipped as "not implemented", with this reason
            raise NotImplementedError("the installed liger-kernel has no LigerFusedAddRMSNorm (added in 2025)")
        super().__init__(dim, eps)
        with torch.device("meta"):
            hide(self, "_liger", fused(dim, eps=eps, offset=0.0, casting_mode=CASTING_MODE, in_place=False))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return call_with(self._liger, {"weight": self.weight}, x, residual)
