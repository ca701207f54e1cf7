"""The kit for wrapping real kernels: functional adapters pass the laws, name maps and fused weights round-trip,
the RoPE permutation turns an interleaved kernel into the contract's attention, the numpy bridge runs forward and
backward, and an unsupported dtype is a skip with its own reason (distinct from an exercise stub)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import nanolm_core
from properties.adapters.kit import (
    DtypeNotSupported,
    Fuse,
    block,
    bridge,
    library_params,
    permute_rope,
    rmsnorm,
    rope_permutation,
    swiglu,
    to_contract,
)
from properties.running.loading import load
from properties.running.runner import LAWS, run_law

CONFIG = nanolm_core.ModelConfig(dim=32, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=8)


def rms_norm(x, weight, eps):
    return F.rms_norm(x, x.shape[-1:], weight, eps)


def swiglu_fn(x, w_gate, w_up, w_down):
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


def block_fn(x, params, config):
    ref = nanolm_core.Block(config).to(device=x.device, dtype=x.dtype)
    return torch.func.functional_call(ref, dict(params), (x,))


def _module(tmp_path, monkeypatch, text: str, name: str = "my_adapter") -> str:
    """A user's adapter module on disk, importable by name (as a worker imports it)."""
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_five_line_functional_module_passes_the_laws(tmp_path, monkeypatch):
    spec = _module(
        tmp_path,
        monkeypatch,
        "from tests.adapters.test_kit import rms_norm, swiglu_fn, block_fn\n"
        "from properties.adapters.kit import rmsnorm, swiglu, block\n"
        "RMSNorm = rmsnorm(rms_norm)\nSwiGLU = swiglu(swiglu_fn)\nBlock = block(block_fn)\n",
    )
    impl = load(spec)
    assert impl.provided == ("RMSNorm", "SwiGLU", "Block")
    assert impl.factory("RMSNorm").__module__ == "tests.adapters.test_kit"  # named after the wrapped function's module
    for law_id in ("RMSNorm.rmsnorm_matches_golden", "SwiGLU.swiglu_matches_golden", "Block.block_matches_golden"):
        result = run_law(LAWS[law_id], impl, dtype=torch.float32, profile="ci")
        assert result.status == "passed", result.message


def test_functional_block_hands_over_the_contract_state_dict():
    seen = {}

    def spy(x, params, config):
        seen.update(params)
        return x

    mod = block(spy)(CONFIG)
    mod(torch.zeros(1, 2, CONFIG.dim))
    assert list(seen) == list(nanolm_core.Block(CONFIG).state_dict())
    assert all(seen[k] is v for k, v in mod.named_parameters())  # live parameters: gradients reach them


def test_fused_weights_are_concatenated_differentiably_and_split_back():
    mod = nanolm_core.SwiGLU(4, 3)
    names = {"gate_up_proj.weight": Fuse("w_gate.weight", "w_up.weight"), "down_proj.weight": "w_down.weight"}
    lib = library_params(mod, names)
    assert lib["gate_up_proj.weight"].shape == (6, 4)
    lib["gate_up_proj.weight"].sum().backward()
    assert torch.equal(mod.w_gate.weight.grad, torch.ones(3, 4))
    back = to_contract({k: v.detach() for k, v in lib.items()}, names, {"w_gate.weight": 3, "w_up.weight": 3})
    assert all(torch.equal(back[k], v) for k, v in mod.state_dict().items())


def test_rope_permutation_matches_the_checkpoint_converters_and_inverts():
    K = 8
    p = rope_permutation(K, to="interleaved")
    assert p.tolist() == [0, 4, 1, 5, 2, 6, 3, 7]  # interleaved row 2j ← j, 2j + 1 ← j + K/2
    w = torch.randn(2 * K, 3)
    meta = permute_rope(w, 2, to="interleaved")
    hf = meta.view(2, K // 2, 2, 3).transpose(1, 2).reshape(2 * K, 3)  # transformers' convert_llama_weights_to_hf
    assert torch.equal(hf, w)
    assert torch.equal(permute_rope(meta, 2, to="rotate-half"), w)


def test_an_interleaved_rope_kernel_computes_the_contracts_attention_on_permuted_weights():
    """The gallery's interleaved-RoPE Block, given W_q and W_k permuted by the kit, equals the reference."""
    ref = nanolm_core.Block(CONFIG).double()
    state = {k: torch.randn_like(v) * 0.3 + ("norm" in k) for k, v in ref.state_dict().items()}
    ref.load_state_dict(state)
    wrong = load("properties.gallery.rope_interleaved").factory("Block")(CONFIG).double()
    moved = dict(state)
    moved["attn.wq.weight"] = permute_rope(state["attn.wq.weight"], CONFIG.n_heads, to="interleaved")
    moved["attn.wk.weight"] = permute_rope(state["attn.wk.weight"], CONFIG.n_kv_heads, to="interleaved")
    wrong.load_state_dict(moved)
    x = torch.randn(2, 7, CONFIG.dim, dtype=torch.float64)
    torch.testing.assert_close(wrong(x), ref(x), rtol=1e-12, atol=1e-12)
    wrong.load_state_dict(state)
    assert not torch.allclose(wrong(x), ref(x), atol=1e-6)  # without the permutation it is another function


def np_rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    X = x.astype(np.float64)
    return (X / np.sqrt((X * X).mean(-1, keepdims=True) + eps) * w).astype(x.dtype)


def np_rms_norm_vjp(g, x, w, eps):
    from properties.adapters.onnx_runtime import rms_norm_vjp

    return rms_norm_vjp(g, x, w, eps)


def test_the_bridge_runs_numpy_forward_and_backward_inside_autograd():
    f = bridge(np_rms_norm, np_rms_norm_vjp)
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    w = torch.rand(5, dtype=torch.float64, requires_grad=True) + 0.5
    torch.testing.assert_close(f(x, w, 1e-6), rms_norm(x, w, 1e-6))
    assert torch.autograd.gradcheck(lambda a, b: f(a, b, 1e-6), (x, w))


def test_the_bridge_carries_bf16_through_ml_dtypes():
    pytest.importorskip("ml_dtypes")
    x = torch.randn(2, 8).to(torch.bfloat16)
    y = bridge(np_rms_norm)(x, torch.ones(8, dtype=torch.bfloat16), 1e-6)
    assert y.dtype == torch.bfloat16 and y.shape == x.shape


def test_a_forward_only_bridge_skips_the_gradient_laws_as_not_implemented(tmp_path, monkeypatch):
    spec = _module(
        tmp_path,
        monkeypatch,
        "from tests.adapters.test_kit import np_rms_norm\nfrom properties.adapters.kit import bridge, rmsnorm\n"
        "RMSNorm = rmsnorm(bridge(np_rms_norm))\n",
        "forward_only",
    )
    impl = load(spec)
    ok = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], impl, dtype=torch.float32, profile="ci")
    grads = run_law(LAWS["RMSNorm.rmsnorm_gradients_match_golden"], impl, dtype=torch.float32, profile="ci")
    assert ok.status == "passed", ok.message
    assert grads.status == "skipped" and "forward-only kernel" in grads.message, grads.message


def test_an_unsupported_dtype_is_a_skip_with_its_own_reason(tmp_path, monkeypatch):
    spec = _module(
        tmp_path,
        monkeypatch,
        "from tests.adapters.test_kit import rms_norm\nfrom properties.adapters.kit import rmsnorm\n"
        "RMSNorm = rmsnorm(rms_norm, dtypes=('fp32',))\n",
        "fp32_only",
    )
    impl = load(spec)
    skipped = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], impl, dtype=torch.bfloat16, profile="ci")
    assert skipped.status == "skipped"
    assert skipped.message.startswith("dtype not supported") and "not bf16" in skipped.message
    stub = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], load("exercises_en"), dtype=torch.bfloat16, profile="ci")
    assert stub.status == "skipped" and stub.message.startswith("not implemented")  # the exercise stub: another reason


def test_dtype_not_supported_raised_by_the_kernel_itself_is_a_skip_too():
    def picky(x, weight, eps):
        if x.dtype == torch.float16:
            raise DtypeNotSupported("no fp16 kernel on this device")
        return rms_norm(x, weight, eps)

    mod = rmsnorm(picky)(8).half()
    with pytest.raises(DtypeNotSupported):
        mod(torch.ones(1, 8, dtype=torch.float16))


def test_functional_swiglu_passes_the_contract_weights_in_linear_layout():
    seen = []
    mod = swiglu(lambda x, g, u, d: seen.append((g.shape, u.shape, d.shape)) or x)(4, 6)
    mod(torch.zeros(1, 4))
    assert seen == [((6, 4), (6, 4), (4, 6))]
