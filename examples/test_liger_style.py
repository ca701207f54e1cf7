"""A Liger-style kernel test with the drop-in assertions, for all four components: run it with
``pytest examples/test_liger_style.py``.

The "kernels" here are plain PyTorch stand-ins written the way Liger-Kernel's are called: an RMSNorm that stores its
weight ``w`` and applies ``offset + w`` (``offset=1.0``: Gemma) in one of three casting modes, a SwiGLU MLP, a fused
add + RMSNorm that returns the normalised output and the updated residual stream, and a transformer block. Each test
hands the drop-in the kernel's own terms — the stored weight and its ``offset``, how the casting mode computes as
``conventions=`` — and the drop-in judges the output (and the gradients) against the golden value within the bound
derived for that arithmetic. Forget the ``offset=`` and the failure says which declaration fits, ready to paste.
"""

from __future__ import annotations

import pytest
import torch

import nanolm_core
from properties.testing import (
    assert_add_rmsnorm_close,
    assert_add_rmsnorm_grads_close,
    assert_block_close,
    assert_block_grads_close,
    assert_rmsnorm_close,
    assert_rmsnorm_grads_close,
    assert_swiglu_close,
    assert_swiglu_grads_close,
)

# ---------------------------------------------------------------------------------------------- the kernels


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float, offset: float = 0.0, casting_mode: str = "llama"):
    """Liger's ``LigerRMSNormFunction``, in PyTorch: y = x·rsqrt(mean(x²) + eps)·(offset + w) in three casting modes."""
    if casting_mode == "gemma":  # everything in fp32, one rounding at the end
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * (offset + w.float())).to(x.dtype)
    if casting_mode == "llama":  # the norm in fp32 rounded to x.dtype, then times the gain offset + w formed in fp32
        xf = x.float()
        normed = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
        return (normed.float() * (offset + w.float())).to(x.dtype)
    # "none": every operation in x.dtype but the sum of squares
    ms = x.float().pow(2).mean(-1, keepdim=True).to(x.dtype)
    return x * torch.rsqrt(ms + eps) * (offset + w)


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, w: torch.Tensor, eps: float, offset: float = 0.0):
    """Liger's ``LigerFusedAddRMSNorm``, in PyTorch: h = x + residual (rounded to x.dtype), y = RMSNorm(h)."""
    h = x + residual
    return rms_norm(h, w, eps, offset, casting_mode="gemma"), h


def swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """Liger's ``LigerSwiGLUMLP``: down(silu(gate(x)) * up(x))."""
    return torch.nn.functional.linear(
        torch.nn.functional.silu(x @ w_gate.T) * (x @ w_up.T), w_down
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------- the tests

# how each casting mode computes, in the drop-ins' typed keys: judged at that precision, not excused
DECLARED = {
    "gemma": {},  # fp32 throughout, one rounding: the contract's reference arithmetic
    "llama": {"roundings": 2},  # x·r rounded to the input dtype, then ·w
    "none": {"compute_dtype": "input", "accumulation_dtype": "fp32"},  # bf16 arithmetic, fp32 sum of squares
}


def _randn(*shape: int, seed: int, dtype: torch.dtype = torch.bfloat16, shift: float = 0.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) + shift).to(dtype)


@pytest.mark.parametrize("offset", [0.0, 1.0], ids=["llama-style", "gemma-style"])
@pytest.mark.parametrize("mode", DECLARED)
def test_rms_norm(mode: str, offset: float) -> None:
    x = _randn(2, 8, 64, seed=0, shift=0.5).requires_grad_()
    w = (_randn(64, seed=1) * 0.1 + (1.0 - offset)).requires_grad_()  # the stored weight: a gain of ≈ 1
    y = rms_norm(x, w, 1e-6, offset, casting_mode=mode)
    assert_rmsnorm_close(y, x, w, 1e-6, offset=offset, conventions=DECLARED[mode], msg=f"casting_mode={mode}")
    dy = _randn(*y.shape, seed=2)
    y.backward(dy)
    assert_rmsnorm_grads_close((x.grad, w.grad), x, w, dy, 1e-6, offset=offset, conventions=DECLARED[mode])


@pytest.mark.parametrize("offset", [0.0, 1.0], ids=["llama-style", "gemma-style"])
def test_fused_add_rms_norm(offset: float) -> None:
    x = _randn(4, 64, seed=3).requires_grad_()
    residual = _randn(4, 64, seed=4, shift=0.5).requires_grad_()
    w = (_randn(64, seed=5) * 0.1 + (1.0 - offset)).requires_grad_()
    y, h = fused_add_rms_norm(x, residual, w, 1e-6, offset)
    assert_add_rmsnorm_close((y, h), x, residual, w, 1e-6, offset=offset, conventions={"norm_input": "rounded"})
    dy = _randn(4, 64, seed=6)
    y.backward(dy)  # h unused downstream: its cotangent is None
    grads = (x.grad, residual.grad, w.grad)
    assert_add_rmsnorm_grads_close(grads, x, residual, w, (dy, None), 1e-6, offset=offset)


def test_swiglu() -> None:
    x = _randn(16, 64, seed=7, shift=0.5).requires_grad_()
    shapes = ((96, 64), (96, 64), (64, 96))
    wg, wu, wd = (_randn(*s, seed=8 + i).div(s[1] ** 0.5).requires_grad_() for i, s in enumerate(shapes))
    y = swiglu(x, wg, wu, wd)
    assert_swiglu_close(y, x, wg, wu, wd)
    dy = _randn(*y.shape, seed=11)
    y.backward(dy)
    assert_swiglu_grads_close((x.grad, wg.grad, wu.grad, wd.grad), x, wg, wu, wd, dy)


def test_block() -> None:
    config = nanolm_core.ModelConfig(dim=32, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=8)
    block = nanolm_core.Block(config).to(torch.float32)  # the kernel under test would be your fused block
    x = _randn(2, 6, 32, seed=12, dtype=torch.float32).requires_grad_()
    out = block(x)
    assert_block_close(out, x, block, config)
    dy = _randn(*out.shape, seed=13, dtype=torch.float32)
    out.backward(dy)
    grads = {"x": x.grad, "ffn_norm.weight": block.ffn_norm.weight.grad}
    assert_block_grads_close(grads, x, block, config, dy)
