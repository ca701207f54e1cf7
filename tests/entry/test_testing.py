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
    OutputContractError,
    VerificationError,
    assert_add_rmsnorm_close,
    assert_add_rmsnorm_grads_close,
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
    assert isinstance(info.value, VerificationError) and isinstance(info.value, AssertionError)
    lead = len("properties.testing.VerificationError: ")  # pytest prints it, and "E" + 7 spaces, before each line
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
    with pytest.raises(ValueError, match=r"conventions= unknown key 'compute_dtyp'; did you mean 'compute_dtype'\?$"):
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
    with pytest.raises(LawFailure, match=r"dweight: ULP error"):
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


# ---------------------------------------------------------------------------------------------- AddRMSNorm, records


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_add_rmsnorm_drop_ins_pass_the_reference_and_fail_a_wrong_sum(dtype):
    norm = nanolm_core.AddRMSNorm(64).to(dtype)
    norm.weight.data = _x(64, dtype, 1)
    x, r = _x((5, 64), dtype).requires_grad_(), _x((5, 64), dtype, 2).requires_grad_()
    y, h = norm(x, r)
    assert assert_add_rmsnorm_close((y, h), x, r, norm.weight) >= 0
    assert assert_add_rmsnorm_close((y, None), x, r, norm.weight) >= 0  # h not checked
    gy, gh = _x((5, 64), dtype, 3), _x((5, 64), dtype, 4)
    torch.autograd.backward((y, h), (gy, gh))
    grads = (x.grad, r.grad, norm.weight.grad)
    assert assert_add_rmsnorm_grads_close(grads, x, r, norm.weight, (gy, gh)) >= 0
    with pytest.raises(VerificationError, match=r"h: ULP error"):
        assert_add_rmsnorm_close((y, (x + r * 1.01).detach()), x, r, norm.weight)
    with pytest.raises(VerificationError, match=r"dresidual: ULP error"):
        assert_add_rmsnorm_grads_close({"residual": r.grad - gh}, x, r, norm.weight, (gy, gh))  # stream's g_h dropped
    with pytest.raises(ValueError, match=r"actual is the tuple \(y, h\)"):
        assert_add_rmsnorm_close(y, x, r, norm.weight)


def _gemma(x: torch.Tensor, w_stored: torch.Tensor, eps: float, offset: float = 1.0) -> torch.Tensor:
    """Liger's / Gemma's RMSNorm: the stored w applied as the gain offset + w (in fp32)."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * (offset + w_stored.float())).to(x.dtype)


def test_a_gemma_kernel_is_judged_in_its_own_terms_and_a_failure_prints_the_declaration_to_paste():
    x, w = _x((8, 256), torch.bfloat16), _x(256, torch.bfloat16, 5) * 0.1  # the stored w, near 0
    y = _gemma(x, w, 1e-6)
    with pytest.raises(VerificationError) as info:
        assert_rmsnorm_close(y, x, w, eps=1e-6)
    text = " ".join(str(info.value).split())
    assert "gain 1 + w" in text and 'paste: conventions={"weight_offset": 1.0}' in text
    assert info.value.suggestion == 'conventions={"weight_offset": 1.0}'
    pasted = eval(info.value.suggestion.split("=", 1)[1])  # the printed value is Python source
    assert assert_rmsnorm_close(y, x, w, eps=1e-6, conventions=pasted) >= 0
    assert assert_rmsnorm_close(y, x, w, eps=1e-6, offset=1.0) >= 0  # the kernel's own term
    with pytest.raises(VerificationError):  # not an excuse: an offset of 2 is another function
        assert_rmsnorm_close(_gemma(x, w, 1e-6, offset=2.0), x, w, eps=1e-6, offset=1.0)
    with pytest.raises(ValueError, match=r"offset=1.0 and conventions weight_offset=2.0 disagree"):
        assert_rmsnorm_close(y, x, w, offset=1.0, conventions={"weight_offset": 2.0})
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'offset'"):  # SwiGLU has no gain
        assert_swiglu_close(x, x, w, w, w, offset=1.0)


def test_the_add_rmsnorm_gemma_gradients_follow_the_offset():
    dtype = torch.float32
    x, r = _x((4, 32), dtype).requires_grad_(), _x((4, 32), dtype, 1).requires_grad_()
    w = (_x(32, dtype, 2) * 0.1).requires_grad_()
    h = x + r
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + w)
    gy = _x((4, 32), dtype, 3)
    y.backward(gy)
    with pytest.raises(VerificationError) as info:
        assert_add_rmsnorm_grads_close((x.grad, r.grad, w.grad), x, r, w, (gy, None))
    assert info.value.suggestion == 'conventions={"weight_offset": 1.0}'
    assert assert_add_rmsnorm_grads_close((x.grad, r.grad, w.grad), x, r, w, (gy, None), offset=1.0) >= 0


def test_free_text_and_unknown_keys_are_one_line_errors_naming_the_typed_key():
    x, w = _x((2, 8), torch.float32), torch.ones(8)
    cases = {
        "compute": r"'compute' is free text and changes nothing; the typed key is 'compute_dtype'",
        "notes": r"'notes' is free text and changes nothing; RMSNorm takes typed keys only",
        "rope_layout": r"unknown key 'rope_layout'; a convention of Block, not of RMSNorm",
        "eps_dtyp": r"unknown key 'eps_dtyp'; did you mean 'eps_dtype'\?",
    }
    for key, pattern in cases.items():
        with pytest.raises(ValueError, match=pattern) as info:
            assert_rmsnorm_close(x, x, w, conventions={key: "bf16"})
        assert "\n" not in str(info.value) and len(str(info.value)) <= 120, str(info.value)


def test_an_output_of_another_dtype_raises_the_public_contract_error():
    x = _x((3, 16), torch.bfloat16)
    with pytest.raises(OutputContractError) as info:
        assert_rmsnorm_close(x.float(), x, torch.ones(16, dtype=torch.bfloat16))
    assert isinstance(info.value, ContractFailure) and isinstance(info.value, VerificationError)
    assert type(info.value).__module__ == "properties.testing"


def test_every_record_has_its_drop_ins_and_a_throwaway_component_gets_them():
    import dataclasses

    import properties.testing as testing
    from properties.library import components

    for rec in components.RECORDS.values():
        assert callable(getattr(testing, rec.dropin("close"))) and rec.dropin("close") in testing.__all__
        assert callable(getattr(testing, rec.dropin("grads_close")))
    scaled = components.register(dataclasses.replace(components.record("RMSNorm"), name="ScaledRMSNorm", slug=""))
    try:  # a component is one registered record (docs/ARCHITECTURE.md): the drop-ins read it like any other
        _throwaway_dropins(testing, scaled)
    finally:
        components.unregister("ScaledRMSNorm")


def _throwaway_dropins(testing, scaled) -> None:
    import inspect

    made = testing.dropins(scaled)
    assert set(made) == {"assert_scaled_rmsnorm_close", "assert_scaled_rmsnorm_grads_close"}
    sig = inspect.signature(made["assert_scaled_rmsnorm_close"])
    assert list(sig.parameters)[:4] == ["actual", "x", "weight", "eps"] and "offset" in sig.parameters
    x, w = _x((3, 16), torch.float32), _x(16, torch.float32, 1)
    y = nanolm_core.RMSNorm(16)
    y.weight.data = w
    with torch.no_grad():
        assert made["assert_scaled_rmsnorm_close"](y(x), x, w) >= 0
        with pytest.raises(VerificationError, match=r"assert_scaled_rmsnorm_close \[fp32,\s+cpu\]"):
            made["assert_scaled_rmsnorm_close"](y(x) * 1.01, x, w)


# ---------------------------------------------------------------------------------------------- the example


def _example():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "test_liger_style.py"
    spec = importlib.util.spec_from_file_location("test_liger_style_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def test_the_liger_style_example_passes_for_all_four_components():
    import subprocess
    import sys

    path, _ = _example()
    done = subprocess.run([sys.executable, "-m", "pytest", str(path), "-q", "-p", "no:cacheprovider", "-n", "0"],
                          capture_output=True, text=True, cwd=path.parent)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert "10 passed" in done.stdout


@pytest.mark.parametrize("component", ["RMSNorm", "AddRMSNorm"])
def test_the_examples_gemma_kernels_without_their_offset_print_the_declaration_that_makes_them_pass(component):
    _, ex = _example()
    x, r = ex._randn(4, 64, seed=0, shift=0.5), ex._randn(4, 64, seed=1)
    w = ex._randn(64, seed=2) * 0.1  # Gemma's stored w: the gain is 1 + w
    if component == "RMSNorm":
        actual, check, args = ex.rms_norm(x, w, 1e-6, 1.0, casting_mode="gemma"), assert_rmsnorm_close, (x, w)
    else:
        actual, check, args = ex.fused_add_rms_norm(x, r, w, 1e-6, 1.0), assert_add_rmsnorm_close, (x, r, w)
    with pytest.raises(VerificationError) as info:
        check(actual, *args, 1e-6)
    assert info.value.suggestion is not None and info.value.suggestion in " ".join(str(info.value).split())
    pasted = eval(info.value.suggestion.removeprefix("conventions="))
    assert check(actual, *args, 1e-6, conventions=pasted) >= 0
