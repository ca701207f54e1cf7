"""Implementations that compute *correctly by their own convention* but do not declare it, and one genuine bug: the
subjects of the diagnosis tests (``tests/library/test_diagnosis.py``). Each is a class per component; the tests
build a module around one (``subject``) so every run sees exactly one component, undeclared.

- ``Fp32ForFp64RMSNorm``  fp64 computed in fp32 (HF's ``x.to(torch.float32)``)      → compute_dtype
- ``Fp32EpsRMSNorm``      eps kept as an fp32 constant (ONNX's float attribute)     → eps_dtype
- ``OffsetGainRMSNorm``   the gain formed as 1 + (γ − 1) in the compute dtype        → weight_offset
- ``DazRMSNorm``          subnormal inputs read as 0 (denormals-are-zero)            → flush_subnormals
- ``InterleavedBlock``    RoPE on interleaved pairs (Meta's layout)                  → rope_layout
- ``eps_outside_sqrt``    x / (√ms + eps): a genuine bug                             → no known convention
"""

from __future__ import annotations

import types

import torch
import torch.nn.functional as F

import nanolm_core
from properties.gallery.eps_outside_sqrt import RMSNorm as EpsOutsideRMSNorm
from properties.library.subject import Implementation
from tests.correct_impls.declared import Fp32ForFp64RMSNorm, InterleavedBlock, OffsetGainRMSNorm

__all__ = [
    "SUBJECTS",
    "DazRMSNorm",
    "EpsOutsideRMSNorm",
    "Fp32EpsRMSNorm",
    "Fp32ForFp64RMSNorm",
    "InterleavedBlock",
    "OffsetGainRMSNorm",
    "subject",
]


def _c(x: torch.Tensor) -> torch.dtype:
    return torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype


class Fp32EpsRMSNorm(nanolm_core.RMSNorm):
    """The reference adding eps′ = fl32(eps) (an fp32 kernel argument) whatever the input dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        eps = float(torch.tensor(self.eps, dtype=torch.float32))
        return F.rms_norm(x.to(_c(x)), (self.dim,), self.weight.to(_c(x)), eps).to(x.dtype)


class DazRMSNorm(nanolm_core.RMSNorm):
    """The reference on x and γ with their subnormals (of the input dtype) read as 0; results kept as computed."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def daz(t: torch.Tensor) -> torch.Tensor:
            subnormal = (t != 0) & (t.abs() < torch.finfo(x.dtype).tiny)  # (exact zeros pass: their gradient too)
            return torch.where(subnormal, torch.zeros_like(t), t).to(_c(x))

        return F.rms_norm(daz(x), (self.dim,), daz(self.weight), self.eps).to(x.dtype)


# name → (component, class, the declaration the diagnosis should name — None for the genuine bug)
SUBJECTS = {
    "fp32 arithmetic": ("RMSNorm", Fp32ForFp64RMSNorm, {"compute_dtype": {"fp64": "fp32"}}),
    "fp32 eps": ("RMSNorm", Fp32EpsRMSNorm, {"eps_dtype": "fp32"}),
    "1 + w gain": ("RMSNorm", OffsetGainRMSNorm, {"weight_offset": 1.0}),
    "subnormal inputs flushed": ("RMSNorm", DazRMSNorm, {"flush_subnormals": {"fp32": ["input"]}}),
    "interleaved RoPE": ("Block", InterleavedBlock, {"rope_layout": "interleaved"}),
    "eps outside the square root": ("RMSNorm", EpsOutsideRMSNorm, None),
}


def subject(component: str, cls: type, conventions: dict | None = None, name: str = "") -> Implementation:
    """A module defining only ``component`` (= ``cls``), with ``conventions`` declared for it if given."""
    module = types.ModuleType(name or f"unconventional_{cls.__name__}")
    setattr(module, component, cls)
    if conventions is not None:
        module.CONVENTIONS = {component: conventions}
    return Implementation(module.__name__, module)
