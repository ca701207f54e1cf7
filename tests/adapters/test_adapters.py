"""The adapters honour the contract (names, init, strict loading, dtype moves) and compute what they declare.

Numbers are compared with the reference ``nanolm_core``: fp64 equal to rounding where the library computes
in fp64, the documented conventions (HF-Llama's two roundings, HF's fp32 compute) visible where they differ.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch

import nanolm_core
from golden.formats import FORMATS
from properties.adapters.kit import DtypeNotSupported
from properties.library.subject import Implementation
from properties.running.loading import load
from properties.running.runner import LAWS, run_law

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.hf

CPU_ADAPTERS = ("torch", "hf-llama", "hf-gemma", "hf-qwen2", "hf-mistral", "hf-phi3", "hf-olmo2", "hf-t5", "hf-gemma3")
CPU_ADAPTERS += tuple(a for a in ("torchtune", "onnxruntime") if load(a).skip_reason is None)  # optional extras
HF_NORMS = ("hf-llama", "hf-gemma", "hf-qwen2", "hf-mistral", "hf-phi3", "hf-olmo2", "hf-t5", "hf-gemma3")
DECODERS = ("hf-llama", "hf-qwen2", "hf-mistral", "hf-phi3")
CONFIG = nanolm_core.ModelConfig(dim=64, n_heads=4, n_kv_heads=2, ffn_dim=96, max_seq_len=16)
CONVENTION_KEYS = {"formula", "rounding", "compute_dtype", "source"}
LIBRARY_CLASSES = {("torch", "RMSNorm")}  # the library's class has the contract's names


def _random_state(module: torch.nn.Module, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Random weights for every contract parameter: gains around 1 (with sign changes), matrices ~ 1/√fan_in."""
    state = {}
    for name, value in module.state_dict().items():
        if "norm" in name or name == "weight":
            state[name] = 1.0 + 0.5 * torch.randn(value.shape, generator=gen, dtype=torch.float64)
        else:
            state[name] = torch.randn(value.shape, generator=gen, dtype=torch.float64) / value.shape[-1] ** 0.5
    return state


def _pair(adapter: str, component: str, dtype: torch.dtype, seed: int = 0):
    """(reference module, adapter module), both in ``dtype`` with the same random weights."""
    args = {"RMSNorm": (CONFIG.dim, 1e-6), "SwiGLU": (CONFIG.dim, CONFIG.ffn_dim), "Block": (CONFIG,)}.get(
        component, (CONFIG.dim, 1e-6)
    )  # AddRMSNorm: (dim, eps) as RMSNorm
    ref = getattr(nanolm_core, component)(*args).to(dtype=dtype)
    mod = load(adapter).factory(component)(*args).to(dtype=dtype)
    state = _random_state(ref, torch.Generator().manual_seed(seed))
    ref.load_state_dict(state)
    mod.load_state_dict(state, strict=True)
    return ref, mod


def _input(component: str, dtype: torch.dtype, seed: int = 1) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    shape = (2, 9, CONFIG.dim) if component == "Block" else (5, 3, CONFIG.dim)
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * 2 + 0.5).to(dtype)  # non-zero mean on purpose


def _outputs(mod: torch.nn.Module, component: str, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The component's outputs for input x (AddRMSNorm: (y, h) for the branch x and a residual of x's shape)."""
    if component == "AddRMSNorm":
        return tuple(mod(x, _input(component, x.dtype, seed=7)))
    return (mod(x),)


def _cases():
    for adapter in CPU_ADAPTERS:
        for component in load(adapter).provided:
            yield pytest.param(adapter, component, id=f"{adapter}-{component}")


CASES = list(_cases())


def test_provided_components_are_as_documented():
    assert load("torch").provided == ("RMSNorm", "SwiGLU", "Block")
    for adapter in DECODERS:
        assert load(adapter).provided == ("RMSNorm", "SwiGLU", "Block"), adapter
    for adapter in ("hf-gemma", "hf-olmo2", "hf-t5", "hf-gemma3"):  # their MLPs / layers are not the contract's
        assert load(adapter).provided == ("RMSNorm",), adapter


@pytest.mark.parametrize(("adapter", "component"), CASES)
def test_state_dict_names_are_exactly_the_contracts(adapter, component):
    ref, mod = _pair(adapter, component, torch.float32)
    assert list(mod.state_dict()) == list(ref.state_dict())
    for name, value in ref.state_dict().items():
        assert mod.state_dict()[name].shape == value.shape, name


@pytest.mark.parametrize(("adapter", "component"), CASES)
def test_gains_are_initialised_to_one(adapter, component):
    args = {"SwiGLU": (CONFIG.dim, CONFIG.ffn_dim), "Block": (CONFIG,)}.get(component, (CONFIG.dim,))
    mod = load(adapter).factory(component)(*args)
    gains = {k: v for k, v in mod.state_dict().items() if k.endswith("norm.weight") or k == "weight"}
    assert all(torch.equal(v, torch.ones_like(v)) for v in gains.values())


@pytest.mark.parametrize(("adapter", "component"), CASES)
def test_strict_loading_rejects_foreign_names(adapter, component):
    _, mod = _pair(adapter, component, torch.float32)
    state = dict(mod.state_dict())
    state["gate_proj.weight"] = torch.zeros(1)
    with pytest.raises(RuntimeError, match="gate_proj"):
        mod.load_state_dict(state, strict=True)


@pytest.mark.parametrize("dtype", [f.dtype for f in FORMATS], ids=str)
@pytest.mark.parametrize(("adapter", "component"), CASES)
def test_output_keeps_shape_dtype_and_leaves_the_input_alone(adapter, component, dtype):
    _, mod = _pair(adapter, component, dtype)
    x = _input(component, dtype)
    before = x.clone()
    try:
        outs = _outputs(mod, component, x)
    except DtypeNotSupported as exc:  # declared: a skip of the laws, not a contract failure
        assert not load(adapter).conventions[component].supports(dtype)
        pytest.skip(str(exc))
    for y in outs:
        assert (y.shape, y.dtype, y.device) == (x.shape, x.dtype, x.device)
        assert torch.isfinite(y).all()
    assert torch.equal(x, before)


@pytest.mark.parametrize(("adapter", "component"), CASES)
def test_gradients_reach_the_contract_parameters(adapter, component):
    supports = load(adapter).conventions[component].supports
    dtype = torch.float64 if supports(torch.float64) else torch.float32  # (ONNX Runtime's skip norm has no fp64)
    _, mod = _pair(adapter, component, dtype)
    sum(y.square().sum() for y in _outputs(mod, component, _input(component, dtype))).backward()
    missing = [n for n, p in mod.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing


@pytest.mark.parametrize(("adapter", "component"), CASES)
def test_adapter_subclasses_the_reference_and_replaces_its_arithmetic(adapter, component):
    """Contract names come from the reference (no copied __init__); no part runs the reference's own arithmetic
    (every module in the tree, linear layers aside, is the adapter's class or the library's)."""
    _, mod = _pair(adapter, component, torch.float32)
    if (adapter, component) not in LIBRARY_CLASSES:
        assert isinstance(mod, getattr(nanolm_core, component))
    reference = [n for n, m in mod.named_modules() if type(m).__module__.startswith("nanolm_core")]
    assert not reference, f"{adapter} {component} runs reference parts: {reference}"


@pytest.mark.parametrize(("adapter", "component"), CASES)
def test_conventions_are_declared(adapter, component):
    declared = load(adapter).convention(component)
    assert CONVENTION_KEYS <= set(declared), f"{adapter} {component} lacks {CONVENTION_KEYS - set(declared)}"


# ------------------------------------------------------------------------------------------ numbers


ALL_DTYPES = tuple(f.dtype for f in FORMATS)
BITWISE = [
    ("torch", "RMSNorm", ALL_DTYPES),
    ("torch", "SwiGLU", ALL_DTYPES),
    *[(a, "SwiGLU", (torch.float64, torch.float32, torch.bfloat16)) for a in ("hf-llama", "hf-qwen2", "hf-mistral")],
    ("hf-olmo2", "RMSNorm", (torch.float32, torch.float16, torch.bfloat16)),  # one rounding in fp32, as the reference
]
CLOSE = [("torch", "Block", torch.float64, 1e-13)] + [(a, "Block", torch.float32, 1e-5) for a in DECODERS]


@pytest.mark.parametrize(("adapter", "component", "dtypes"), BITWISE, ids=[f"{a}-{c}" for a, c, _ in BITWISE])
def test_adapter_is_bitwise_the_reference(adapter, component, dtypes):
    for dtype in dtypes:
        ref, mod = _pair(adapter, component, dtype)
        x = _input(component, dtype)
        assert torch.equal(mod(x), ref(x)), dtype


@pytest.mark.parametrize(("adapter", "component", "dtype", "tol"), CLOSE, ids=[f"{a}-{c}" for a, c, *_ in CLOSE])
def test_adapter_block_matches_the_reference_to_rounding(adapter, component, dtype, tol):
    ref, mod = _pair(adapter, component, dtype)
    x = _input(component, dtype)
    torch.testing.assert_close(mod(x), ref(x), rtol=tol, atol=tol)


def test_hf_llama_rmsnorm_rounds_twice_in_bf16():
    """x·r rounded to bf16, then ·w rounded again: within 1 ULP of the one-rounding result, yet often different."""
    ref, mod = _pair("hf-llama", "RMSNorm", torch.bfloat16)
    x = (torch.randn(64, CONFIG.dim, generator=torch.Generator().manual_seed(3)) * 3 + 1).to(torch.bfloat16)
    one, two = ref(x), mod(x)
    expected = (x.float() * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16)
    assert torch.equal(two, expected * mod.weight)  # exactly HF's formula w · fl(x·r)
    ulp = torch.finfo(torch.bfloat16).eps * one.double().abs().clamp_min(1e-30)  # ≥ 1 ULP of bf16 at `one`
    assert ((two.double() - one.double()).abs() <= ulp).all()
    assert (two != one).float().mean() > 0.05  # the convention is visible, not an artefact


@pytest.mark.parametrize("adapter", HF_NORMS)
def test_hf_rmsnorms_compute_fp64_input_in_fp32(adapter):
    """A documented finding: HF's norms call x.to(float32) / x.float(), so fp64 results are only fp32-accurate."""
    ref, mod = _pair(adapter, "RMSNorm", torch.float64)
    x = _input("RMSNorm", torch.float64)
    rel = ((mod(x) - ref(x)).abs() / ref(x).abs()).max().item()
    assert 1e-12 < rel < 1e-4  # fp32-level (Gemma also rounds gains near 0 to fp32 absolute precision)


@pytest.mark.parametrize("adapter", ["hf-gemma", "hf-gemma3"])
def test_gemma_rmsnorm_is_bitwise_the_reference_when_its_offset_is_exact(adapter):
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        ref, mod = _pair(adapter, "RMSNorm", dtype)
        exact = mod.weight.detach().clone()
        exact.copy_(torch.linspace(0.5, 3.0, CONFIG.dim))  # w ≥ 0.5: w − 1 exact in fp32 (Sterbenz / same binade)
        ref.weight.data.copy_(exact)
        mod.weight.data.copy_(exact)
        x = _input("RMSNorm", dtype)
        assert torch.equal(mod(x), ref(x)), dtype


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_gemma_offset_mapping_is_exact_where_documented(dtype):
    """w_eff = fl32(1 + fl32(w − 1)) equals w when |w| < 2²⁴ and w is a multiple of 2⁻²⁴ (w > 0) / 2⁻²³ (w < 0)."""
    from properties.adapters.hf_gemma import gemma_weight

    every = torch.arange(2**16, dtype=torch.int32).to(torch.int16).view(dtype)
    w = every[torch.isfinite(every)]
    exact = (1.0 + gemma_weight(w).float()).double() == w.double()
    wd = w.double()
    grid = torch.where(wd > 0, 2.0**24, 2.0**23)
    predicted = (wd.abs() < 2.0**24) & (torch.frac(wd * grid) == 0)
    assert exact[predicted].all()  # the documented sufficient condition (large |w| may also round back to w)
    assert not exact[(wd.abs() < 2.0**-24) & (wd != 0)].any()  # tiny gains are lost: 1 + (w − 1) rounds to 0
    if dtype == torch.bfloat16:
        in_range = (wd.abs() >= 2.0**-16) & (wd.abs() < 2.0**24)
    else:
        in_range = (wd >= 0) | (wd <= -(2.0**-13))
    assert exact[in_range].all()


def test_gemma_weight_is_the_contract_gain_in_the_state_dict():
    _, mod = _pair("hf-gemma", "RMSNorm", torch.float32)
    assert list(mod.state_dict()) == ["weight"]
    mod.weight.data.fill_(2.0)
    x = torch.ones(1, CONFIG.dim)
    torch.testing.assert_close(mod(x), torch.full_like(x, 2.0), rtol=1e-6, atol=0)  # gain 2, not 1 + 2


def test_hf_llama_block_keeps_rope_frequencies_in_fp32():
    _, mod = _pair("hf-llama", "Block", torch.bfloat16)
    assert mod.attn._rotary.inv_freq.dtype == torch.float32
    assert all(not k.startswith("_") for k in mod.state_dict())


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_hf_llama_decoder_layer_is_the_contracts_composition_of_its_parts(dtype):
    """LlamaDecoderLayer = x + attn(attn_norm(x)), then + ffn(ffn_norm(h)): bitwise, so the Block's ``attn``
    (LlamaAttention on the same positions, cos/sin and mask) is the attention the decoder layer runs."""
    _, mod = _pair("hf-llama", "Block", dtype)
    x = _input("Block", dtype)
    h = x + mod.attn(mod.attn_norm(x))
    assert torch.equal(mod(x), h + mod.ffn(mod.ffn_norm(h)))


def test_hf_llama_block_is_causal():
    _, mod = _pair("hf-llama", "Block", torch.float64)
    x = _input("Block", torch.float64)
    changed = x.clone()
    changed[:, -1] += 1.0  # the last token may change only itself
    torch.testing.assert_close(mod(changed)[:, :-1], mod(x)[:, :-1], rtol=0, atol=0)


# ------------------------------------------------------------------------------------------ liger


def test_liger_imports_everywhere_and_says_why_it_skips():
    impl = load("liger")
    assert impl.provided == ("RMSNorm", "SwiGLU", "AddRMSNorm")
    from properties.adapters import liger

    if liger.skip_reason() is None:
        pytest.skip("liger-kernel and CUDA are available here: the CUDA tier covers it")
    assert impl.skip_reason and ("CUDA" in impl.skip_reason or "not installed" in impl.skip_reason)
    with pytest.raises(RuntimeError, match="liger adapter unavailable"):
        impl.factory("RMSNorm")(CONFIG.dim)


@pytest.mark.parametrize("adapter", ["torch", *DECODERS])
@pytest.mark.parametrize(("dim", "hidden"), [(1, 1), (5, 1), (31, 7)])
def test_swiglu_accepts_any_sizes(adapter, dim, hidden):
    """The contract has no head count: HF's config validation (heads divide D, even RoPE dim) must not leak in."""
    mod = load(adapter).factory("SwiGLU")(dim, hidden).to(dtype=torch.float64)
    assert mod(torch.ones(2, dim, dtype=torch.float64)).shape == (2, dim)


# ------------------------------------------------------------------------------------------ the new adapters' findings


@pytest.mark.parametrize("adapter", ["hf-qwen2", "hf-mistral", "hf-phi3", "hf-t5"])
def test_llama_style_norms_round_twice_in_bf16(adapter):
    """Qwen2, Mistral, Phi-3 (Llama's norm) and T5: w · fl(x·r), exactly HF Llama's formula."""
    _, mod = _pair(adapter, "RMSNorm", torch.bfloat16)
    x = (torch.randn(64, CONFIG.dim, generator=torch.Generator().manual_seed(3)) * 3 + 1).to(torch.bfloat16)
    xr = (x.float() * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16)
    assert torch.equal(mod(x), xr * mod.weight)


def test_olmo2_rounds_once_where_llama_rounds_twice():
    ref, olmo = _pair("hf-olmo2", "RMSNorm", torch.bfloat16)
    _, llama = _pair("hf-llama", "RMSNorm", torch.bfloat16)
    x = (torch.randn(64, CONFIG.dim, generator=torch.Generator().manual_seed(3)) * 3 + 1).to(torch.bfloat16)
    assert torch.equal(olmo(x), ref(x))
    assert (llama(x) != olmo(x)).float().mean() > 0.05


def test_phi3_fuses_the_contracts_weights_and_gradients_reach_each_part():
    _, mod = _pair("hf-phi3", "Block", torch.float64)
    ffn, attn = mod.ffn, mod.attn
    fused = ffn.hf_params()["gate_up_proj.weight"]
    assert torch.equal(fused, torch.cat([ffn.w_gate.weight, ffn.w_up.weight]))
    qkv = attn.hf_params("", torch.zeros(1, dtype=torch.float64))["qkv_proj.weight"]
    assert qkv.shape == (CONFIG.dim + 2 * CONFIG.n_kv_heads * CONFIG.head_dim, CONFIG.dim)
    assert list(mod.state_dict()) == list(nanolm_core.Block(CONFIG).state_dict())


def test_qwen2_biases_are_held_at_zero_and_are_not_parameters():
    _, mod = _pair("hf-qwen2", "Block", torch.float32)
    params = mod.attn.hf_params("", torch.zeros(1))
    assert all(torch.equal(params[f"{p}_proj.bias"], torch.zeros_like(params[f"{p}_proj.bias"])) for p in "qkv")
    assert not any("bias" in k for k in mod.state_dict())


def test_t5_forms_the_mean_square_of_fp64_input_in_fp32():
    """T5: variance = x.to(float32).pow(2).mean(): the statistics of fp64 input are those of x rounded to fp32."""
    _, mod = _pair("hf-t5", "RMSNorm", torch.float64)
    x = _input("RMSNorm", torch.float64)
    r32 = torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)  # fp32 arithmetic, as T5
    assert torch.equal(mod(x), mod.weight * (x * r32))


def test_onnxruntime_rmsnorm_is_within_the_bound_and_skips_bf16():
    pytest.importorskip("onnxruntime")
    from properties.adapters.kit import DtypeNotSupported
    from properties.testing import assert_rmsnorm_close

    for dtype in (torch.float64, torch.float32, torch.float16):
        _, mod = _pair("onnxruntime", "RMSNorm", dtype)
        x = _input("RMSNorm", dtype)
        assert_rmsnorm_close(mod(x).detach(), x, mod.weight.detach(), eps=1e-6)
    _, mod = _pair("onnxruntime", "RMSNorm", torch.bfloat16)
    with pytest.raises(DtypeNotSupported, match="not bf16"):
        mod(_input("RMSNorm", torch.bfloat16))


def test_onnxruntime_skip_norm_returns_the_sum_and_normalises_it_unrounded():
    """SkipSimplifiedLayerNormalization: h is x + r rounded once; y is the norm of the fp32 sum (the fused order:
    its declared norm_input), which differs from the norm of the rounded h on a quarter of the fp16 elements."""
    pytest.importorskip("onnxruntime")
    from nanolm_core.modules import rms_norm

    gen = torch.Generator().manual_seed(3)
    r = (torch.randn(8, 1024, generator=gen, dtype=torch.float64) * 4 + 1).half()
    x = (torch.randn(8, 1024, generator=gen, dtype=torch.float64) / 16).half()
    _, mod = _pair("onnxruntime", "AddRMSNorm", torch.float16)
    mod = type(mod)(1024).half()
    y, h = (t.detach() for t in mod(x, r))
    assert torch.equal(h, x + r)
    fused, unfused = rms_norm(x.float() + r.float(), mod.weight, 1e-6).half(), rms_norm(x + r, mod.weight, 1e-6)
    assert (y == fused).double().mean() > 0.99 > 0.9 > (y == unfused).double().mean()
    assert load("onnxruntime").conventions["AddRMSNorm"].norm_input == "sum"
    with pytest.raises(DtypeNotSupported, match="not bf16"):
        mod.bfloat16()(x.bfloat16(), r.bfloat16())


@pytest.mark.parametrize("adapter", ["timm", "torchtune"])
def test_optional_adapters_import_everywhere_and_say_why_they_skip(adapter):
    impl = load(adapter)
    if impl.skip_reason is None:
        pytest.skip(f"{adapter} is importable here: its numbers are tested below")
    assert adapter in impl.skip_reason


def test_onnxruntime_stores_eps_in_fp32():
    """The documented finding: on an eps-dominated fp64 row ONNX Runtime is exact for eps = fl32(1e-6), not 1e-6."""
    pytest.importorskip("onnxruntime")
    from properties.adapters.onnx_runtime import ort_rms_norm

    x, w = np.full((1, 8), 1e-5), np.ones(8)  # mean(x²) = 1e-10 ≪ eps
    ms = (x * x).mean(-1, keepdims=True)
    y = ort_rms_norm(x, w, 1e-6)
    assert np.array_equal(y, x / np.sqrt(ms + float(np.float32(1e-6))))
    assert 1e-9 < abs(y[0, 0] / (x / np.sqrt(ms + 1e-6))[0, 0] - 1) < 2e-9


def test_torchtune_computes_fp64_in_fp32_and_its_rope_is_interleaved():
    """Its norm and RoPE run in fp32 (fp64 input too); its attention, given the kit's permuted W_q / W_k, is the
    contract's rotate-half attention; given the weights unpermuted it is another function."""
    if load("torchtune").skip_reason:
        pytest.skip(load("torchtune").skip_reason)
    ref, mod = _pair("torchtune", "Block", torch.float64)
    x = _input("Block", torch.float64)
    rel = ((mod.attn(x) - ref.attn(x)).abs().max() / ref.attn(x).abs().max()).item()
    assert 1e-12 < rel < 1e-5  # fp32 RoPE in an fp64 Block
    ref32, mod32 = _pair("torchtune", "Block", torch.float32)
    torch.testing.assert_close(mod32(x.float()), ref32(x.float()), rtol=1e-5, atol=1e-5)
    attn = mod32.attn
    plain = {**attn.tt_params("", x), "q_proj.weight": attn.wq.weight, "k_proj.weight": attn.wk.weight}
    unpermuted = torch.func.functional_call(mod32.attn._tt, plain, (x.float(), x.float()))
    assert not torch.allclose(unpermuted, ref32.attn(x.float()), atol=1e-3)


# ------------------------------------------------------------------ findings that are declarations, honoured
CONVERTS_FIRST = ("hf-llama", "hf-gemma", "hf-qwen2", "hf-mistral", "hf-phi3", "hf-olmo2", "hf-gemma3")


@pytest.mark.parametrize("adapter", CONVERTS_FIRST)
def test_hf_norms_read_fp64_input_as_fp32_as_declared(adapter):
    """The declaration compute_dtype fp64 → fp32 is the truth: the norm's fp64 output is a function of fl32(x)."""
    assert load(adapter).conventions["RMSNorm"].compute("fp64") == "fp32"
    _, mod = _pair(adapter, "RMSNorm", torch.float64)
    x = _input("RMSNorm", torch.float64)
    assert torch.equal(mod(x), mod(x.float().double())) and not torch.equal(x, x.float().double())


def _stripped(adapter: str, component: str, *keys: str) -> Implementation:
    """The adapter's component with ``keys`` removed from its declaration."""
    impl = load(adapter)
    module = types.ModuleType(f"{adapter}-without-{'-'.join(keys)}")
    setattr(module, component, impl.factory(component))
    module.CONVENTIONS = {component: {k: v for k, v in impl.convention(component).items() if k not in keys}}
    return Implementation(module.__name__, module)


@pytest.mark.parametrize(
    ("adapter", "component", "keys", "law_id", "dtype"),
    [
        ("hf-llama", "RMSNorm", ("compute_dtype",), "RMSNorm.rmsnorm_matches_golden", "fp64"),
        ("hf-llama", "Block", ("compute_dtype",), "Block.block_matches_golden", "fp64"),
        ("hf-gemma3", "RMSNorm", ("weight_offset",), "RMSNorm.rmsnorm_matches_golden", "fp32"),
    ],
)
def test_the_declaration_is_what_makes_the_finding_pass(adapter, component, keys, law_id, dtype):
    """Judged at the declared precision the finding passes (no expectation entry needed); without it, it fails."""
    honoured = run_law(LAWS[law_id], load(adapter), dtype=dtype, profile="ci")
    assert honoured.status == "passed" and honoured.declared, honoured.message
    assert 0 < honoured.measurements["headroom"] <= 1
    plain = run_law(LAWS[law_id], _stripped(adapter, component, *keys), dtype=dtype, profile="ci")
    assert plain.status == "failed" and plain.cause == "law"
