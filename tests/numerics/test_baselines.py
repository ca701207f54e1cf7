"""The same-dtype baselines of the Block's derivative laws (properties/library/baselines.py): every member computes
the same function (its permutations mapped back), and one member alone is no baseline — on ill-conditioned cases
(nearly constant rows of very different scales, sharp attention) another correct computation errs several times
more than the reference as written, beyond bounds.block_vjp of the reference alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import nanolm_core
from properties.adapters import torch_ref
from properties.library import baselines
from properties.library import strategies as S
from properties.numerics import bounds
from tests.correct_impls import two_roundings

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
    assert len(members) == len(baselines.MEMBERS) == 7
    for name in ["x", *NAMES]:
        first = members[0][name]
        for m in members[1:]:
            assert m[name].shape == first.shape
            np.testing.assert_allclose(m[name], first, rtol=0, atol=1e-9 * np.abs(first).max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_one_member_alone_is_exceeded_by_another_correct_computation(dtype: torch.dtype) -> None:
    exceeded = []
    for seed in range(8):
        x, params, v = _case(seed, dtype)
        exact = baselines.block_grads(CONFIG, params, x, v, torch.float64, members=1)[0]["x"]
        members = [m["x"] for m in baselines.block_grads(CONFIG, params, x, v, dtype)]
        alone = bounds.block_vjp(members[:1], exact, CONFIG, x.shape[1], dtype).abs.max()
        exceeded += [np.abs(m - exact).max() > alone for m in members[1:]]
    assert any(exceeded)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_the_members_admit_correct_implementations_of_every_convention(dtype: torch.dtype) -> None:
    """HF's two roundings in the norm and SwiGLU (tests/correct_impls/two_roundings) and SDPA (torch_ref) are within
    bounds.block_vjp over every member on the ill-conditioned cases."""
    for seed in range(4):
        x, params, v = _case(seed, dtype)
        exact = baselines.block_grads(CONFIG, params, x, v, torch.float64, members=1)[0]["x"]
        b = bounds.block_vjp(
            [m["x"] for m in baselines.block_grads(CONFIG, params, x, v, dtype)], exact, CONFIG, 4, dtype
        )
        for cls in (two_roundings.Block, torch_ref.Block):
            assert np.abs(_vjp(cls, params, x, v, dtype) - exact).max() <= b.abs.max(), (cls, seed)


def _vjp(
    cls: type, params: dict[str, torch.Tensor], x: torch.Tensor, v: torch.Tensor, dtype: torch.dtype
) -> np.ndarray:
    block = cls(CONFIG).to(dtype)
    block.load_state_dict({k: t.to(dtype) for k, t in params.items()})
    xx = x.to(dtype).requires_grad_(True)
    (dx,) = torch.autograd.grad(block(xx), [xx], v.to(dtype))
    return dx.double().numpy()
