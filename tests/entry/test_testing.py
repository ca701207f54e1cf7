"""Drop-in assertions: pass on the reference in every dtype, fail with the laws' message (and a rerun line) on a
wrong kernel, and check the output's shape and dtype as the laws do."""

from __future__ import annotations

import pytest
import torch

import nanolm_core
from golden.formats import FORMATS
from properties.library.context import ContractFailure, LawFailure
from properties.testing import assert_block_close, assert_rmsnorm_close, assert_swiglu_close

DTYPES = [f.dtype for f in FORMATS]
CONFIG = nanolm_core.ModelConfig(dim=32, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=8)


def _x(shape, dtype, seed=0):
    return (torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) + 0.5).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_reference_passes_all_three(dtype):
    norm = nanolm_core.RMSNorm(64).to(dtype)
    norm.weight.data = _x(64, dtype, 1)
    x = _x((5, 64), dtype)
    with torch.no_grad():
        assert assert_rmsnorm_close(norm(x), x, norm.weight, eps=1e-6) >= 0  # the max ULP error, for reporting
        ffn = nanolm_core.SwiGLU(64, 96).to(dtype)
        assert_swiglu_close(ffn(x), x, ffn.w_gate.weight, ffn.w_up.weight, ffn.w_down.weight)
        if dtype in (torch.float64, torch.float32):
            blk = nanolm_core.Block(CONFIG).to(dtype)
            xb = _x((2, 6, CONFIG.dim), dtype)
            assert_block_close(blk(xb), xb, blk, CONFIG)
            assert_block_close(blk(xb), xb, blk.state_dict(), CONFIG)


def test_a_wrong_kernel_fails_with_the_laws_message():
    x, w = _x((4, 64), torch.float32) * 1e-4, _x(64, torch.float32, 1)
    wrong = x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 1e-6) * w  # eps outside the square root
    with pytest.raises(LawFailure) as info:
        assert_rmsnorm_close(wrong, x, w, eps=1e-6)
    text = str(info.value)
    assert text.startswith("y: ULP error ") and "> bound" in text and "c=fp32" in text  # the compute dtype named
    assert "[RMSNorm, fp32, shape=[4, 64], D=64, cpu, eps: 1e-06]" in text
    assert "reproduce: pytest tests/entry/test_testing.py::test_a_wrong_kernel_fails_with_the_laws_message" in text


def test_the_output_must_keep_the_inputs_dtype_and_shape():
    x = _x((3, 16), torch.bfloat16)
    w = torch.ones(16, dtype=torch.bfloat16)
    with pytest.raises(ContractFailure, match=r"RMSNorm output: dtype torch.float32 ≠ torch.bfloat16"):
        assert_rmsnorm_close(nanolm_core.RMSNorm(16).bfloat16()(x).float(), x, w)
    with pytest.raises(ContractFailure, match=r"shape \(16,\) ≠ \(3, 16\)"):
        assert_rmsnorm_close(x[0], x, w)
