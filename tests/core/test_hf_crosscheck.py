"""The reference against real implementations, with the same weights: HF transformers' LlamaDecoderLayer
for the Block (rotate-half RoPE, GQA mapping, causal mask) and torch's F.rms_norm for RMSNorm.

"Equal to rounding" is made precise with the golden oracle: both outputs lie within the derived bound b
of the exact value, hence |ours − theirs| ≤ 2·b elementwise.

HF's LlamaRMSNorm casts to fp32 even for fp64 input, and its eager attention runs softmax in fp32, so
in fp64 the HF layer is compared with SDPA attention and the norms' formula evaluated in fp64 (the
norms themselves are cross-checked against F.rms_norm below); in fp32 HF's own modules are used.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import golden
import nanolm_core
from nanolm_core.attention import rope_cos_sin
from properties.numerics import bounds

pytestmark = pytest.mark.hf
transformers = pytest.importorskip("transformers", reason="needs the hf extra: pip install -e '.[hf]'")
from transformers import LlamaConfig  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaDecoderLayer  # noqa: E402

HF_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn.wq.weight": "self_attn.q_proj.weight",
    "attn.wk.weight": "self_attn.k_proj.weight",
    "attn.wv.weight": "self_attn.v_proj.weight",
    "attn.wo.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn.w_gate.weight": "mlp.gate_proj.weight",
    "ffn.w_up.weight": "mlp.up_proj.weight",
    "ffn.w_down.weight": "mlp.down_proj.weight",
}


class RMSNormFormulaInInputDtype(nn.Module):
    """HF's LlamaRMSNorm formula, w ⊙ (x · rsqrt(mean(x²) + eps)), without its cast to fp32."""

    def __init__(self, weight: torch.Tensor, eps: float) -> None:
        super().__init__()
        self.weight, self.eps = weight, eps

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps))


def assert_both_within_bound(ours, theirs, g, b, what):
    for name, out in (("nanolm_core", ours), (what, theirs)):
        err = (out.double() - torch.from_numpy(g.hi)).abs().numpy()
        worst = (err / b.abs).max()
        assert worst <= 1.0, f"{name} exceeds the derived bound by {worst:.3g}× ({b.formula})"
    diff = (ours.double() - theirs.double()).abs().numpy()
    assert (diff <= 2 * b.abs).all(), f"|nanolm_core − {what}| max {diff.max():.3g} > 2·bound ({b.formula})"


def random_block(cfg, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    block = nanolm_core.Block(cfg)
    with torch.no_grad():
        for name, p in block.named_parameters():
            scale = 1.0 if name.endswith("norm.weight") else p.shape[-1] ** -0.5
            p.copy_(torch.randn(p.shape, generator=gen) * scale + (1.0 if name.endswith("norm.weight") else 0.0))
    x = (torch.randn(2, 7, cfg.dim, generator=gen) + 0.5).to(dtype)
    return block.to(dtype), x


def hf_layer(cfg, block, dtype, attn_implementation):
    hc = LlamaConfig(
        hidden_size=cfg.dim,
        intermediate_size=cfg.ffn_dim,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        rms_norm_eps=cfg.norm_eps,
        max_position_embeddings=cfg.max_seq_len,
        attn_implementation=attn_implementation,
    )
    layer = LlamaDecoderLayer(hc, layer_idx=0).to(dtype)
    layer.load_state_dict({HF_NAMES[k]: v for k, v in block.state_dict().items()}, strict=True)
    return layer


def hf_forward(layer, cfg, x, attn_implementation):
    T = x.shape[1]
    cos, sin = rope_cos_sin(T, cfg.head_dim, cfg.rope_theta, torch.float64, x.device)  # HF's formula, in fp64
    mask = None if attn_implementation == "sdpa" else torch.full((T, T), float("-inf"), dtype=x.dtype).triu(1)
    out = layer(
        x,
        position_embeddings=(cos[None].to(x.dtype), sin[None].to(x.dtype)),
        attention_mask=None if mask is None else mask[None, None],
    )
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4], ids=["G=1", "G=2", "G=H"])
@pytest.mark.parametrize(
    ("dtype", "attn_implementation"),
    [(torch.float64, "sdpa"), (torch.float32, "sdpa"), (torch.float32, "eager")],
    ids=["fp64-sdpa", "fp32-sdpa", "fp32-eager"],
)
def test_block_equals_hf_llama_decoder_layer(n_kv_heads, dtype, attn_implementation):
    cfg = nanolm_core.ModelConfig(dim=64, n_heads=4, n_kv_heads=n_kv_heads, ffn_dim=160)
    block, x = random_block(cfg, dtype, seed=n_kv_heads)
    layer = hf_layer(cfg, block, dtype, attn_implementation)
    if dtype == torch.float64:
        layer.input_layernorm = RMSNormFormulaInInputDtype(layer.input_layernorm.weight, cfg.norm_eps)
        layer.post_attention_layernorm = RMSNormFormulaInInputDtype(layer.post_attention_layernorm.weight, cfg.norm_eps)
    with torch.no_grad():
        ours, theirs = block(x), hf_forward(layer, cfg, x, attn_implementation)
    params = dict(block.state_dict())
    assert_both_within_bound(
        ours,
        theirs,
        golden.block(x, params, cfg),
        bounds.block(x, params, cfg, dtype),
        f"HF LlamaDecoderLayer ({attn_implementation})",
    )


def test_hf_llama_rmsnorm_is_only_fp32_accurate_in_fp64():
    """Why the fp64 comparison swaps HF's norms: measured, LlamaRMSNorm loses fp64 accuracy."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    x = torch.randn(4, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) + 1
    hf = LlamaRMSNorm(64).to(torch.float64)(x)
    g = golden.rmsnorm(x, torch.ones(64, dtype=torch.float64), 1e-6)
    err = (hf - torch.from_numpy(g.hi)).abs().max().item()
    assert err > 1e3 * torch.finfo(torch.float64).eps, "HF LlamaRMSNorm became fp64-accurate: simplify this test"


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
@pytest.mark.parametrize("D", [1, 3, 64, 123, 769, 4096])
def test_rmsnorm_equals_torch_functional_rms_norm(dtype, D):
    gen = torch.Generator().manual_seed(D)
    x = ((torch.randn(6, D, generator=gen) + 2.0) * torch.logspace(-4, 4, 6, dtype=torch.float64)[:, None]).to(dtype)
    w = torch.randn(D, generator=gen).to(dtype)
    ours = nanolm_core.RMSNorm(D, eps=1e-6).to(dtype)
    with torch.no_grad():
        ours.weight.copy_(w)
        y = ours(x)
    theirs = F.rms_norm(x, (D,), w, 1e-6)
    assert_both_within_bound(y, theirs, golden.rmsnorm(x, w, 1e-6), bounds.rmsnorm(x, w, 1e-6, dtype), "F.rms_norm")
