"""Pitfall: a fused residual-add that reads x from the start of its storage, not from its data pointer.

The mistake: the kernel that adds the residual, h = x + attn(norm(x)), is bound to the *storage's* base
address, so it reads x with the right strides from storage offset 0. The attention branch gets the right
x; the residual stream gets whatever precedes the view in its buffer: the previous rows, or the other parts
of a fused buffer. A view at offset 0 (and every contiguous tensor of its own) is exact.

Why people make it: a tensor's ``untyped_storage().data_ptr()`` (or a memcpy from it) looks like its data
pointer; they differ only for a view with a storage offset, and test tensors are fresh allocations.

Evidence: pytorch/pytorch#108472 (compiled code reading inputs with an existing storage offset from offset
0: silently wrong), torch-spyre/torch-spyre#3770 (a sliced device tensor passed to a compiled region read
from offset 0), nntile/nntile#464 (a copy from ``storage().data_ptr()`` dropped the offset of a contiguous
view).

Caught by: Block.block_ignores_memory_layout — the offset and fused-slice views of x must give what their
contiguous copies give.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """WRONG for x with a storage offset: the residual x is read from storage offset 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x.as_strided(x.shape, x.stride(), 0)  # the bug: the storage's base, not x's data pointer
        h = residual + self.attn(self.attn_norm(x))
        return h + self.ffn(self.ffn_norm(h))
