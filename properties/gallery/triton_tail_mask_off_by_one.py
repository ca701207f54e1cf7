"""Pitfall (Triton): the tail mask off by one — ``cols < n_cols - 1`` — drops each row's last column: it is left
out of the sum of squares and never stored (y keeps whatever ``torch.empty`` held there).

The mistake: a mask written for an inclusive bound (``cols <= n_cols - 1``) typed as an exclusive one, or a
``n_cols - 1`` carried over from a loop that counted from one. Invisible while D is a power of two and the block is
exactly D wide only if the mask is skipped; with the mask, every D loses its last column.

Why people make it: off-by-one in a mask is the most common Triton bug — the interpreter, a torch reference and
D = 7 or 2^k + 1 find it; the usual D = 4096 test with its y compared at atol 1e-2 may not.

Evidence: test-only, none cited — a mutation of the correct kernel (triton_rmsnorm) kept to prove the law has power
over Triton kernels run by the interpreter.

Caught by: RMSNorm.rmsnorm_matches_golden — any D, the last column is wrong.
"""

from __future__ import annotations

import triton
import triton.language as tl

from properties.gallery import triton_rmsnorm

__all__ = ["RMSNorm"]


@triton.jit
def forward_kernel(X, Y, W, RSTD, stride, n_rows, n_cols, eps,
                   BLOCK: tl.constexpr, ROWS: tl.constexpr, COMPUTE: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols - 1)  # WRONG: one column short
    x = tl.load(X + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0).to(COMPUTE)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(W + cols, mask=cols < n_cols, other=0.0).to(COMPUTE)
    y = x * rstd[:, None] * w[None, :]
    tl.store(Y + rows[:, None] * n_cols + cols[None, :], y.to(Y.dtype.element_ty), mask=mask)
    tl.store(RSTD + rows, rstd, mask=rows < n_rows)


class RMSNorm(triton_rmsnorm.RMSNorm):
    """The Triton RMSNorm whose forward mask stops one column short."""

    kernel = forward_kernel
