"""Pitfall: the residual stream kept in fp32 and returned so — a bf16 block that outputs fp32.

The mistake: h = fp32(x) + fp32(attn(attn_norm(x))), out = h + fp32(ffn(ffn_norm(h))), and out is returned
without a cast back to x.dtype. Keeping the residual in fp32 is a legitimate accuracy technique; leaking
it through the block's interface is not: the next block now receives fp32.

Why people make it: "residual in fp32" options exist in fused add+norm kernels, and the cast back is one
line at the very end that a refactor drops; values are more accurate, so numeric tests pass.

Evidence: none known for the Block; the same drift in a norm is huggingface/transformers#30236 (see the
dtype_drift pitfall). Kept as a test-only mutation.

Caught by: Block.block_preserves_shape_dtype_device in bf16/fp16.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """WRONG: the pre-norm block with its residual stream in fp32 (fp64 for fp64), returned without a cast."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float() + self.attn(self.attn_norm(x)).float()
        out = h + self.ffn(self.ffn_norm(h.to(x.dtype))).float()
        return out.double() if x.dtype == torch.float64 else out  # the bug: no ".to(x.dtype)"
