"""The same-dtype baselines of the Block's derivative laws (properties/library/baselines.py): every member computes
the same function (its permutations mapped back), and one member alone is no baseline — on ill-conditioned cases
(nearly constant rows of very different scales, sharp attention) another correct computation errs several times
more than the reference as written, beyond bounds.block_vjp of the reference alone."""

from __future__ import annotations

import numpy as np
import torch

import nanolm_core
from properties.library import baselines
from properties.library import strategies as S
from properties.numerics import bounds

CONFIG = nanolm_core.ModelConfig(dim=12, n_layers=1, n_heads=3, n_kv_heads=1, vocab_size=8, ffn_dim=24)
NAMES = ["attn_norm.weight", "attn.wv.weight", "attn.wo.weight", "ffn.w_gate.weight", "ffn.w_down.weight"]


def _case(seed: int, dtype: torch.dtype) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
    """Rows near-constant at scales 0.2, 32, 0.5, 0.002; weights of scale 2, q/k ×8 (sharp attention)."""
    rng = np.random.default_rng(seed)
    scales = np.array([0.2, 32.0, 0.5, 0.002])[:, None]
    x = torch.from_numpy(scales * (1 + 0.05 * rng.standard_normal((4, 12))))[None].to(dtype)
    params = S.block_params(CONFIG, dtype, seed, scale=2.0, logit_scale=8.0)
    return x, params, S.cotangent(tuple(x.shape), dtype, 1)


def test_every_member_computes_the_same_derivatives_in_fp64():
    x, params, v = _case(0, torch.float64)
    members = baselines.block_grads(CONFIG, params, x, v, torch.float64, NAMES)
    assert len(members) == len(baselines.MEMBERS) == 5
    for name in ["x", *NAMES]:
        first = members[0][name]
        for m in members[1:]:
            assert m[name].shape == first.shape
            np.testing.assert_allclose(m[name], first, rtol=0, atol=1e-9 * np.abs(first).max())


def test_one_member_alone_is_exceeded_by_another_correct_computation():
    """(fp32: in 16-bit dtypes the normwise term 8(D+F+T)·u·max|vᵀJ| alone exceeds every member's error.)"""
    dtype, exceeded = torch.float32, []
    for seed in range(8):
        x, params, v = _case(seed, dtype)
        exact = baselines.block_grads(CONFIG, params, x, v, torch.float64, members=1)[0]["x"]
        members = [m["x"] for m in baselines.block_grads(CONFIG, params, x, v, dtype)]
        alone = bounds.block_vjp(members[:1], exact, CONFIG, x.shape[1], dtype).abs.max()
        exceeded += [np.abs(m - exact).max() > alone for m in members[1:]]
    assert any(exceeded)
