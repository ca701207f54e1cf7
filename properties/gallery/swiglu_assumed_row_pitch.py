"""Pitfall: a fused SwiGLU kernel that checks only the last stride and assumes a row pitch of D.

The mistake: the wrapper accepts any x whose last dimension is contiguous (``x.stride(-1) == 1``) and hands
the kernel ``x.data_ptr()`` with rows at ``row·D`` — the pitch of a contiguous tensor. For a slice of a fused
buffer (``torch.split`` of a qkv or gate/up projection: row pitch 3·D), every other row (pitch 2·D) or a
broadcast row (pitch 0) the kernel reads other rows, or the neighbouring parts of the fused buffer. Masked
loads past the end of the storage return 0.

Why people make it: "last dimension contiguous" is the condition for vectorised loads, and it is mistaken
for "contiguous"; the tests build x with ``torch.randn``.

Evidence: vllm-project/vllm-xpu-kernels#397 (a norm kernel that took no input stride, fed the
``torch.split`` outputs of DeepSeek-V3's fused projection), flashinfer-ai/flashinfer#4060 (a reviewer: the
kernel's contiguity assumptions must be checked or non-contiguous inputs are silently corrupted).

Caught by: SwiGLU.swiglu_ignores_memory_layout — the fused-slice, strided and broadcast views of x must give
what their contiguous copies give.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["SwiGLU"]


def rows_at_pitch_d(x: torch.Tensor) -> torch.Tensor:
    """What a kernel told "row pitch = D" reads from x.data_ptr(): numel values in a row, 0 past the storage."""
    n, start = x.numel(), x.storage_offset()
    available = max(0, min(n, x.untyped_storage().nbytes() // x.element_size() - start))
    flat = x.new_zeros(n)
    flat[:available] = x.as_strided((available,), (1,), start)
    return flat.view(x.shape)


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG for a non-contiguous x with x.stride(−1) = 1: rows read at pitch D from x's data pointer."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_contiguous():
            x = rows_at_pitch_d(x) if x.stride(-1) == 1 else x.contiguous()  # the bug: only stride(−1) checked
        return super().forward(x)
