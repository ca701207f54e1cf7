"""Pitfall: a fused add + norm that addresses the residual with x's strides.

The mistake: the kernel is handed both tensors' data pointers but one set of strides — x's (its row pitch, its
column stride) — and reads row i of the residual at ``residual_ptr + i·x.stride(-2)``. Where both are contiguous
tensors of one shape (every test that builds them fresh) the strides agree and the result is exact; when the
residual is another view than x — the stream a slice of a larger buffer, x the transposed output of a projection,
one of them broadcast — the kernel adds other elements of the residual's storage (or the memory past it) to x.

Why people make it: fused kernels take one ``stride`` argument per row (``input_stride``) and the residual is
"the same shape", so its strides look redundant; the wrapper checks x's layout only.

Evidence: none known as a public bug report. Kept as a test-only mutation: it proves the AddRMSNorm layout law
(new in this round, from the generic layout family) has power over the second input.

Emulated here in PyTorch: the residual's storage is read at its storage offset with x's strides (indices wrapped
into the storage, where a CUDA kernel would read the memory beyond it).

Caught by: AddRMSNorm.add_rmsnorm_ignores_memory_layout — every input is laid out differently from the others in
each call, and the result must be what the contiguous copies give.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm"]


def _read_with_strides_of(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """t's storage read from t's storage offset with ``like``'s strides (the bug), as a new tensor of t's shape."""
    count = t.untyped_storage().nbytes() // t.element_size()
    flat = t.as_strided((count,), (1,), 0)  # the whole storage (differentiable: the gradient reaches t)
    index = torch.full(t.shape, t.storage_offset(), dtype=torch.long, device=t.device)
    for dim, (n, stride) in enumerate(zip(t.shape, like.stride(), strict=True)):
        shape = [1] * t.dim()
        shape[dim] = n
        index = index + torch.arange(n, device=t.device).view(shape) * stride
    return flat[index % count]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG for a residual laid out otherwise than x: the residual is read with x's strides."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        h = x + _read_with_strides_of(residual, x)  # the bug: one set of strides for both inputs
        return rms_norm(h, self.weight, self.eps), h
