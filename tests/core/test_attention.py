"""The reference attention's named steps (RoPE, key/value head expansion, causal scores, softmax·v) compose to
exactly the function it computed before it had them: bitwise, in every dtype, for MQA, GQA and MHA."""

from __future__ import annotations

import pytest
import torch

import nanolm_core
from golden.formats import FORMATS
from nanolm_core.attention import Attention, apply_rope, rope_cos_sin

DTYPES = [f.dtype for f in FORMATS]
CONFIGS = [  # (H, G): MHA, GQA with 1 < G < H, MQA
    nanolm_core.ModelConfig(dim=32, n_heads=4, n_kv_heads=4, max_seq_len=16),
    nanolm_core.ModelConfig(dim=48, n_heads=6, n_kv_heads=2, max_seq_len=16),
    nanolm_core.ModelConfig(dim=32, n_heads=4, n_kv_heads=1, max_seq_len=16, rope_theta=500000.0),
]


def frozen_forward(attn: Attention, x: torch.Tensor) -> torch.Tensor:
    """``Attention.forward`` as it was before the seams (commit 83237c8), kept verbatim as the oracle."""
    cfg = attn.config
    B, T, _ = x.shape
    H, G, K = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    c = torch.float64 if x.dtype == torch.float64 else torch.float32
    q = attn.wq(x).view(B, T, H, K).transpose(1, 2).to(c)
    k = attn.wk(x).view(B, T, G, K).transpose(1, 2).to(c)
    v = attn.wv(x).view(B, T, G, K).transpose(1, 2).to(c)
    cos, sin = rope_cos_sin(T, K, cfg.rope_theta, c, x.device)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k, v = k.repeat_interleave(cfg.n_rep, dim=1), v.repeat_interleave(cfg.n_rep, dim=1)
    scores = q @ k.transpose(-2, -1) / K**0.5
    causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    probs = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    return attn.wo((probs @ v).transpose(1, 2).reshape(B, T, H * K).to(x.dtype))


def _attention(config: nanolm_core.ModelConfig, dtype: torch.dtype, seed: int) -> Attention:
    gen = torch.Generator().manual_seed(seed)
    attn = Attention(config)
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) / p.shape[-1] ** 0.5)
    return attn.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"H{c.n_heads}G{c.n_kv_heads}")
@pytest.mark.parametrize("T", [1, 2, 7, 16])
def test_forward_is_bitwise_the_pre_seam_forward(dtype, config, T):
    attn = _attention(config, dtype, seed=T)
    x = (torch.randn(3, T, config.dim, generator=torch.Generator().manual_seed(100 + T), dtype=torch.float64) * 2).to(
        dtype
    )
    with torch.no_grad():
        assert torch.equal(attn(x), frozen_forward(attn, x))


def test_query_head_h_reads_kv_head_h_div_n_rep():
    kv = torch.arange(2.0).view(1, 2, 1, 1)  # H = 6 query heads, G = 2 kv heads holding 0 and 1
    assert Attention(CONFIGS[1]).expand_kv(kv).flatten().tolist() == [0, 0, 0, 1, 1, 1]


def test_mask_lets_token_t_see_keys_s_up_to_t():
    scores = Attention(CONFIGS[0]).mask(torch.zeros(1, 1, 3, 3))
    assert torch.isinf(scores).tolist() == [[[[False, True, True], [False, False, True], [False, False, False]]]]


def test_block_builds_its_parts_from_class_attributes():
    class Unscaled(Attention):
        def scores(self, q, k):
            return q @ k.transpose(-2, -1)

    class Variant(nanolm_core.Block):
        attn_cls = Unscaled

    block = Variant(CONFIGS[1])
    assert type(block.attn) is Unscaled and list(block.state_dict()) == list(nanolm_core.Block(CONFIGS[1]).state_dict())
