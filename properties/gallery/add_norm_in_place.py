"""Pitfall: the add + norm written with in-place ops — in fp32 it overwrites the caller's x and returns it twice.

The mistake (nano-vllm's ``add_rms_forward``, torch.compile removed)::

    x = x.float().add_(residual.float())   # .float() of an fp32 tensor is the tensor itself
    residual = x.to(orig_dtype)            # … and so is .to() of the same dtype
    x.mul_(torch.rsqrt(var + eps))         # normalises the caller's x, and the "residual" with it
    x = x.to(orig_dtype).mul_(weight)

In bf16 every cast copies and the function is correct; in fp32 the casts are no-ops, so the caller's x is
overwritten, y and h are one tensor, and the stream carries the normalised value.

Why people make it: in-place ops save memory and ``.float()`` "obviously" makes a copy — it does not when the
tensor already is fp32. Tests in the serving dtype (bf16) pass.

Evidence: GeeeekExplorer/nano-vllm#170 (the same no-op copy in its ``rms_forward`` corrupted the residual).

Caught by: AddRMSNorm.add_rmsnorm_outputs_are_new_tensors in fp32 — x modified, y and h overlapping x.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """WRONG in fp32 (and fp64: ``.float()`` then copies, but ``.to(orig_dtype)`` does not): in-place add and norm."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        orig_dtype = x.dtype
        x = x.float().add_(residual.float())  # the bug: no copy when x is fp32
        residual = x.to(orig_dtype)
        var = x.pow(2).mean(dim=-1, keepdim=True)
        x.mul_(torch.rsqrt(var + self.eps))
        x = x.to(orig_dtype).mul_(self.weight)
        return x, residual
