"""Drop-in assertions: pass on the reference in every dtype, fail with the laws' message (and a rerun line) on a
wrong kernel, check the output's shape and dtype as the laws do, and take what ``torch.testing.assert_close`` takes
(``msg``, ``check_dtype``) plus declared conventions; the gradient assertions likewise."""

from __future__ import annotations

import pytest
import torch

import nanolm_core
from golden.formats import FORMATS
from properties.library.context import ContractFailure, LawFailure
from properties.testing import (
    assert_block_close,
    assert_block_grads_close,
    assert_rmsnorm_close,
    assert_rmsnorm_grads_close,
    assert_swiglu_close,
    assert_swiglu_grads_close,
)

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
    flat = " ".join(text.split())
    assert flat.startswith("assert_rmsnorm_close [fp32, cpu]: y: ULP error ") and "> bound" in flat
    assert "(headroom " in flat and "c=fp32" in flat  # the compute dtype named in the bound
    assert "input: RMSNorm, fp32, shape=[4, 64], D=64, cpu, eps: 1e-06" in flat
    assert "reproduce: pytest tests/entry/test_testing.py::test_a_wrong_kernel_fails_with_the_laws_message" in text
    lead = len("properties.library.context.LawFailure: ")  # pytest prints it, and "E" + 7 spaces, before each line
    lines = text.splitlines()
    assert lead + len(lines[0]) <= 72 and all(len(line) <= 72 for line in lines if not line.startswith("reproduce:"))
    assert " max " not in flat  # the bound at the judged element only: no maximum over the others


def test_msg_is_the_headline_or_rewrites_the_message():
    x, w = _x((4, 64), torch.float32) * 1e-4, _x(64, torch.float32, 1)
    wrong = x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 1e-6) * w
    with pytest.raises(LawFailure) as info:
        assert_rmsnorm_close(wrong, x, w, eps=1e-6, msg="kernel v2, eps=1e-6")
    first, second = str(info.value).splitlines()[:2]
    assert first == "kernel v2, eps=1e-6" and second.startswith("  assert_rmsnorm_close [fp32, cpu]:")
    with pytest.raises(LawFailure, match=r"^MINE\nassert_rmsnorm_close"):
        assert_rmsnorm_close(wrong, x, w, eps=1e-6, msg=lambda text: "MINE\n" + text)


def test_check_dtype_false_judges_an_output_in_its_own_dtype():
    x = _x((3, 64), torch.bfloat16)
    w = _x(64, torch.float32, 1)  # fp32 weights, bf16 activations: HF's LlamaRMSNorm returns fp32 here
    y32 = torch.nn.functional.rms_norm(x.float(), (64,), w, 1e-6)
    with pytest.raises(ContractFailure, match=r"dtype torch.float32 ≠ torch.bfloat16"):
        assert_rmsnorm_close(y32, x, w)
    assert_rmsnorm_close(y32, x, w, check_dtype=False)  # judged as an fp32 result, and within its bound
    with pytest.raises(LawFailure, match=r"\[fp32, cpu\]"):  # judged in fp32, a bf16-rounded result is far off
        assert_rmsnorm_close(y32.bfloat16().float(), x, w, check_dtype=False)


def _liger_none(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """Liger's casting_mode="none": the sum of squares accumulated in fp32, every other operation in bf16."""
    ms = x.float().pow(2).mean(-1, keepdim=True).to(x.dtype)
    return x * torch.rsqrt(ms + eps) * w


def test_a_declared_convention_judges_a_kernel_at_its_declared_precision():
    x, w = _x((16, 512), torch.bfloat16), _x(512, torch.bfloat16, 1).abs() + 0.5
    y = _liger_none(x, w, 1e-6)
    with pytest.raises(LawFailure, match=r"ULP error"):  # judged against fp32 arithmetic: out of bound
        assert_rmsnorm_close(y, x, w)
    declared = {"compute_dtype": "input", "accumulation_dtype": "fp32"}
    assert assert_rmsnorm_close(y, x, w, conventions=declared) > 1.0  # passes at bf16 arithmetic, error kept
    with pytest.raises(LawFailure, match=r"declared: compute fp16→fp16, bf16→bf16"):  # not an excuse: still judged
        assert_rmsnorm_close(y * 1.05, x, w, conventions=declared)
    with pytest.raises(ValueError, match=r"conventions=: .*unknown key \(did you mean 'compute_dtype'\?\)"):
        assert_rmsnorm_close(y, x, w, conventions={"compute_dtyp": "input"})


def test_an_assertion_that_can_judge_nothing_is_an_error_not_a_pass():
    x, w = _x((4, 512), torch.bfloat16), torch.ones(512, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"no element of y can be judged"):  # a 512-term bf16 sum has no bound
        assert_rmsnorm_close(_liger_none(x, w, 1e-6), x, w, conventions={"compute_dtype": "input"})


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gradients_of_the_reference_pass_and_wrong_ones_fail(dtype):
    x = _x((5, 64), dtype).requires_grad_()
    norm = nanolm_core.RMSNorm(64).to(dtype)
    norm.weight.data = _x(64, dtype, 1)
    y = norm(x)
    dy = _x(tuple(y.shape), dtype, 2)
    y.backward(dy)
    assert assert_rmsnorm_grads_close((x.grad, norm.weight.grad), x, norm.weight, dy) >= 0
    assert assert_rmsnorm_grads_close({"weight": norm.weight.grad}, x, norm.weight, dy) >= 0  # one of them
    with pytest.raises(LawFailure, match=r"dγ: ULP error"):
        assert_rmsnorm_grads_close((x.grad, norm.weight.grad * 1.1), x, norm.weight, dy)

    ffn = nanolm_core.SwiGLU(64, 96).to(dtype)
    xs = _x((5, 64), dtype).requires_grad_()
    ys = ffn(xs)
    ys.backward(dy)
    ws = (ffn.w_gate.weight, ffn.w_up.weight, ffn.w_down.weight)
    grads = (xs.grad, *(p.grad for p in ws))
    assert assert_swiglu_grads_close(grads, xs, *ws, dy) >= 0
    with pytest.raises(LawFailure, match=r"dw_up: "):
        assert_swiglu_grads_close({"w_up": ffn.w_gate.weight.grad}, xs, *ws, dy)  # the gate's gradient for up's


def test_block_gradients_pass_on_the_reference_and_fail_when_swapped():
    blk = nanolm_core.Block(CONFIG).double()
    x = _x((2, 6, CONFIG.dim), torch.float64).requires_grad_()
    out = blk(x)
    dy = _x(tuple(out.shape), torch.float64, 3)
    out.backward(dy)
    grads = {"x": x.grad, **{n: p.grad for n, p in blk.named_parameters()}}
    assert assert_block_grads_close(grads, x, blk, CONFIG, dy) >= 0
    with pytest.raises(AssertionError, match=r"∂/∂attn.wk.weight"):
        assert_block_grads_close({"attn.wk.weight": grads["attn.wq.weight"][: grads["attn.wk.weight"].shape[0]]},
                                 x, blk, CONFIG, dy)  # fmt: skip


def test_bad_gradient_arguments_name_the_argument():
    x, w = _x((2, 8), torch.float32), torch.ones(8)
    with pytest.raises(ValueError, match=r"grads names \['bias'\]; expected some of x, weight"):
        assert_rmsnorm_grads_close({"bias": w}, x, w, x)
    with pytest.raises(ValueError, match=r"grads holds no gradient"):
        assert_rmsnorm_grads_close((None, None), x, w, x)


def test_the_output_must_keep_the_inputs_dtype_and_shape():
    x = _x((3, 16), torch.bfloat16)
    w = torch.ones(16, dtype=torch.bfloat16)
    with pytest.raises(ContractFailure, match=r"RMSNorm output: dtype torch.float32 ≠ torch.bfloat16"):
        assert_rmsnorm_close(nanolm_core.RMSNorm(16).bfloat16()(x).float(), x, w)
    with pytest.raises(ContractFailure, match=r"shape \(16,\) ≠ \(3, 16\)"):
        assert_rmsnorm_close(x[0], x, w)
