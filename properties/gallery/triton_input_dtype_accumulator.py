"""Pitfall (Triton): the sum of squares accumulated in the input dtype — a bf16 accumulator over column chunks.

The mistake: the kernel walks each row in chunks of 8 columns (a vector of 8 lanes) and keeps its running sums in
``tl.zeros(..., dtype=X.dtype.element_ty)``: every chunk's x² is added in bf16, each lane's partial sum rounded to
8 bits D/8 times — once a lane's sum is 2^k times a square, the squares it adds are rounded away (stagnation), so
the drift from an fp32 accumulation grows with D.

Why people make it: ``tl.zeros`` with the input's dtype reads naturally, and fp32 tests (where it is harmless)
pass; the fp32 accumulator is a convention one has to know (Liger, vLLM, apex all accumulate in fp32).

Evidence: test-only, none cited — a mutation of the correct kernel (triton_rmsnorm) kept to prove the law has power
over Triton kernels run by the interpreter.

Caught by: RMSNorm.rmsnorm_bf16_drift_from_fp32_is_bounded — bf16 rows, drift beyond the bound for an fp32
accumulation.
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
    acc = tl.zeros((ROWS, 8), dtype=X.dtype.element_ty)  # WRONG: the accumulator in the input dtype
    for start in range(0, BLOCK, 8):
        chunk = start + tl.arange(0, 8)
        m = (rows[:, None] < n_rows) & (chunk[None, :] < n_cols)
        xc = tl.load(X + rows[:, None] * stride + chunk[None, :], mask=m, other=0.0)
        acc += xc * xc
    rstd = 1.0 / tl.sqrt(tl.sum(acc.to(COMPUTE), axis=1) / n_cols + eps)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(X + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0).to(COMPUTE)
    w = tl.load(W + cols, mask=cols < n_cols, other=0.0).to(COMPUTE)
    y = x * rstd[:, None] * w[None, :]
    tl.store(Y + rows[:, None] * n_cols + cols[None, :], y.to(Y.dtype.element_ty), mask=mask)
    tl.store(RSTD + rows, rstd, mask=rows < n_rows)


class RMSNorm(triton_rmsnorm.RMSNorm):
    """The Triton RMSNorm whose sum of squares runs in the input dtype."""

    kernel = forward_kernel
