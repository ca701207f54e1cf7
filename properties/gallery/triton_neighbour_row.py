"""Pitfall (Triton): each program finds its row at ``row · BLOCK`` instead of ``row · stride`` — with D not a power
of two, BLOCK > D and a program reads the start of its neighbour's row.

The mistake: the row's base pointer is computed from the block size the kernel was launched with (the padded row
width) instead of the row stride; the store uses the right offset, so y lands where it should but is computed from
the wrong elements. Invisible at D = 4096 (BLOCK = D), wrong at D = 4097 or 5120.

Why people make it: kernels are written and tested at power-of-two model widths; BLOCK and D coincide there.

Evidence: test-only, none cited — a mutation of the correct kernel (triton_rmsnorm) kept to prove the law has power
over Triton kernels run by the interpreter.

Caught by: RMSNorm.rmsnorm_matches_golden — any D that is not a power of two, two rows or more.
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
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    src = rows[:, None] * BLOCK + cols[None, :]  # WRONG: BLOCK where the row stride belongs
    x = tl.load(X + src, mask=mask & (src < n_rows * stride), other=0.0).to(COMPUTE)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(W + cols, mask=cols < n_cols, other=0.0).to(COMPUTE)
    y = x * rstd[:, None] * w[None, :]
    tl.store(Y + rows[:, None] * n_cols + cols[None, :], y.to(Y.dtype.element_ty), mask=mask)
    tl.store(RSTD + rows, rstd, mask=rows < n_rows)


class RMSNorm(triton_rmsnorm.RMSNorm):
    """The Triton RMSNorm whose programs read their rows at multiples of BLOCK."""

    kernel = forward_kernel
