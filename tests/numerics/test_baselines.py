"""The same-dtype baselines of the Block's derivative laws (properties/library/baselines.py): every member computes
the same function (its permutations mapped back), and one member alone is no baseline — on ill-conditioned cases
(nearly constant rows of very different scales, sharp attention) another correct computation errs several times
more than the reference as written, beyond bounds.block_vjp of the reference alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import nanolm_core
from properties.adapters import torch_ref
from properties.library import baselines
from properties.library import strategies as S
from properties.library.laws import block as block_laws
from properties.library.laws.block import build_block
from properties.numerics import bounds
from properties.running import loading
from tests.correct_impls import frms_norm, two_roundings

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
    assert len(members) == len(baselines.MEMBERS) == 19
    assert len(baselines.block_grads(CONFIG, params, x, v, torch.float64)) == 17  # ∂x alone: not the row-ordered
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


def _premise(holds: bool, what: str) -> None:
    """Issue 37: a test whose premise is one CPU's or library's rounding on one case (which member a GEMM or a
    reduction of torch rounds beyond the others) asserts what holds on every machine first — the implementation is
    within every member's allowance — and then checks the premise, skipping with the reason where this machine's
    arithmetic does not produce it (another SIMD width, another BLAS kernel): a proof must not rest on one machine."""
    if not holds:
        pytest.skip(f"premise not produced by this machine's arithmetic: {what}")


def _vjp(
    cls: type,
    params: dict[str, torch.Tensor],
    x: torch.Tensor,
    v: torch.Tensor,
    dtype: torch.dtype,
    config: nanolm_core.ModelConfig = CONFIG,
) -> np.ndarray:
    block = cls(config).to(dtype)
    block.load_state_dict({k: t.to(dtype) for k, t in params.items()})
    xx = x.to(dtype).requires_grad_(True)
    (dx,) = torch.autograd.grad(block(xx), [xx], v.to(dtype))
    return dx.double().numpy()


# A case Hypothesis found for block_jacobian_is_identity_plus_branch (dev profile, seed 5), shrunk: a constant row
# of scale 2^-7 (r = 128) and sharp attention (q/k ×4) at D = 6, F = 1, in bf16.
SHRUNK_CONFIG = nanolm_core.ModelConfig(
    dim=6, n_layers=1, n_heads=3, n_kv_heads=3, vocab_size=8, norm_eps=1e-5, max_seq_len=16, ffn_dim=1
)
SHRUNK_X = [
    [
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    ],
    [
        [-0.0078125, -0.0078125, -0.0078125, -0.0078125, -0.0078125, -0.0078125],
        [-3.0, 0.125, 0.125, 0.125, 0.125, 0.125],
        [1.8359375, 1.5, 1.1875, 1.5, 1.5, 1.5],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    ],
]
SHRUNK_PARAMS = {  # nested lists: each tensor's shape
    "attn_norm.weight": [1.40625, 1.296875, 0.56640625, -1.1640625, -0.86328125, 1.28125],
    "ffn_norm.weight": [0.86328125, -0.6640625, -0.6171875, -1.09375, 0.5625, -0.58984375],
    "attn.wq.weight": [
        [-2.046875, -0.162109375, -0.66015625, -2.0625, -1.84375, 0.039306640625],
        [1.5546875, -0.734375, 0.1572265625, -1.703125, 1.3515625, 0.34765625],
        [1.6640625, 0.458984375, 2.34375, 1.40625, -0.1396484375, -1.296875],
        [2.046875, 0.3046875, 1.1171875, -2.28125, -3.109375, -1.5],
        [-0.546875, -0.029052734375, -3.78125, -1.5546875, 2.28125, -2.1875],
        [-1.578125, 2.109375, -0.98828125, -0.169921875, -3.40625, -1.953125],
    ],
    "attn.wk.weight": [
        [-1.84375, 2.234375, -2.046875, -0.462890625, -2.4375, -0.7578125],
        [1.2890625, 0.2734375, -0.609375, -0.31640625, 0.35546875, 1.0625],
        [-2.140625, 1.6328125, 0.1728515625, 0.84765625, -0.94921875, -0.1904296875],
        [-1.59375, -0.041259765625, 2.359375, 0.77734375, 2.40625, 1.0],
        [-2.484375, -0.400390625, -0.859375, 0.314453125, -0.02685546875, 0.3203125],
        [4.375, -0.173828125, 1.359375, 0.2080078125, 1.46875, 1.984375],
    ],
    "attn.wv.weight": [
        [0.2216796875, 0.361328125, 0.76171875, -0.421875, -0.255859375, 0.48046875],
        [0.35546875, -0.72265625, -0.2041015625, 0.037109375, -0.357421875, -0.26171875],
        [-0.25, 0.318359375, 0.06640625, 0.85546875, 0.439453125, 0.498046875],
        [0.1181640625, -0.314453125, -0.1201171875, -0.0517578125, -0.1708984375, -0.83984375],
        [-0.333984375, -0.10986328125, 0.55078125, -0.046630859375, -0.734375, -0.384765625],
        [0.04931640625, 0.1396484375, -0.36328125, -0.2275390625, 0.6484375, 0.111328125],
    ],
    "attn.wo.weight": [
        [0.1884765625, 0.5703125, -0.0064697265625, -0.150390625, 0.19921875, -0.1953125],
        [0.0537109375, 0.263671875, -0.310546875, -0.6640625, 0.11328125, -0.205078125],
        [-0.55859375, -0.322265625, -0.5546875, -0.1015625, -0.177734375, 0.0164794921875],
        [-0.3046875, 0.08349609375, 0.1435546875, -0.3125, 0.259765625, 0.51953125],
        [-0.07666015625, -0.06884765625, -0.12109375, 0.3125, 0.2275390625, -0.38671875],
        [-0.1982421875, 0.03369140625, -0.67578125, -0.0150146484375, 0.26171875, -0.2578125],
    ],
    "ffn.w_gate.weight": [
        [0.353515625, -0.232421875, 0.0191650390625, -0.1015625, -0.54296875, -0.39453125],
    ],
    "ffn.w_up.weight": [
        [-0.8515625, -1.015625, 0.55078125, -0.5078125, 0.4140625, 0.28125],
    ],
    "ffn.w_down.weight": [
        [2.515625],
        [0.64453125],
        [0.1259765625],
        [-0.05322265625],
        [-1.1015625],
        [-1.078125],
    ],
}


def test_round_randomly_lands_on_a_neighbour_in_t_unbiased_with_the_gradient_of_a_cast():
    gen = torch.Generator().manual_seed(0)
    x = torch.full((4096,), 1 + 2.0**-9, dtype=torch.float32, requires_grad=True)  # a quarter ulp of bf16 above 1
    r = baselines.round_randomly(x, torch.bfloat16, gen)
    assert r.dtype == torch.bfloat16
    assert set(r.tolist()) == {1.0, 1 + 2.0**-7}
    assert abs((r == 1 + 2.0**-7).double().mean().item() - 0.25) < 0.03  # up with probability ¼: unbiased
    (g,) = torch.autograd.grad(r.float().sum(), [x])
    assert torch.equal(g, torch.ones_like(g))
    scale = 2.0 ** torch.randint(-10, 10, (10_000,), generator=gen)  # a few subnormal in fp16
    y = torch.randn(10_000, generator=gen, dtype=torch.float64) * scale
    for t in (torch.bfloat16, torch.float16, torch.float32):
        r, nearest = baselines.round_randomly(y, t, gen).double(), y.to(t).double()
        ulp = torch.finfo(t).eps * nearest.abs().clamp_min(torch.finfo(t).smallest_normal)  # ≥ t's spacing at y
        assert bool(((r - nearest).abs() <= ulp).all()), t  # nearest or its neighbour across y
        assert bool((((r - y) * (nearest - y) <= 0) | (r == nearest)).all()), t  # y's two neighbours only
        assert 0.2 < (r != nearest).double().mean().item() < 0.3, t  # the farther one: E min(f, 1 − f) = ¼
        assert torch.equal(r.to(t).double(), r), t  # exact in t


def test_the_attention_pair_or_random_roundings_admit_a_correct_implementation_the_fixed_conventions_do_not():
    """On the shrunk case, F.rms_norm + SDPA with its RoPE in bf16 (tests/correct_impls/frms_norm) errs 2.4× the
    largest error of the reference's orders, torch_ref and RoundedBlock: which neighbour each intermediate lands
    on, and which conventions of the attention combine, decide the derivative there. The attention's pairs (RoPE in
    t with either kernel errs 55–58 there) and the randomly rounded members (6–50) each reach that far."""
    dt = torch.bfloat16
    x = torch.tensor(SHRUNK_X, dtype=dt)
    params = {n: torch.tensor(vals, dtype=dt) for n, vals in SHRUNK_PARAMS.items()}
    v = S.cotangent(tuple(x.shape), dt, 1)
    exact = baselines.block_grads(SHRUNK_CONFIG, params, x, v, torch.float64, members=1)[0]["x"]
    members = [m["x"] for m in baselines.block_grads(SHRUNK_CONFIG, params, x, v, dt)]
    kinds = [cls for cls, _ in baselines.members_for(())]
    random = [m for m, cls in zip(members, kinds, strict=True) if cls is baselines.RandomlyRoundedBlock]
    pairs = [m for m, cls in zip(members, kinds, strict=True) if cls in baselines.PAIRS]
    fixed = [
        m
        for m, cls in zip(members, kinds, strict=True)
        if cls not in (*baselines.PAIRS, baselines.RandomlyRoundedBlock)
    ]
    err = np.abs(_vjp(frms_norm.Block, params, x, v, dt, SHRUNK_CONFIG) - exact).max()

    def allowed(ms: list[np.ndarray]) -> float:
        return float(bounds.block_vjp(ms, exact, SHRUNK_CONFIG, 4, dt).abs.max())

    assert err <= allowed(fixed + random)
    assert err <= allowed(fixed + pairs)
    assert err <= allowed(members)
    _premise(
        err > allowed(fixed), f"SDPA + RoPE in bf16 errs {err:.3g}, within the fixed conventions' {allowed(fixed):.3g}"
    )


# After a case Hypothesis found (dev profile, seed 9, `block_preserves_gradient_through_depth[fp32]` on hf-phi3): its
# config and layer seeds, and rows of its kinds drawn anew — scales 4 and 60, a tiny row with one outlier, a
# same-sign row near 8000 and a constant one; 4 stacked blocks, one q/k group for 4 heads.
FUSED_CONFIG = nanolm_core.ModelConfig(
    dim=32, n_layers=1, n_heads=4, n_kv_heads=1, vocab_size=8, norm_eps=1e-5, rope_theta=5e5, max_seq_len=16, ffn_dim=4
)


def _fused_case() -> tuple[list[dict[str, torch.Tensor]], torch.Tensor, torch.Tensor]:
    dt, gen = torch.float32, torch.Generator().manual_seed(21)
    layers = [S.block_params(FUSED_CONFIG, dt, s, scale=2.0**-3) for s in (1, 245, 1, 325)]
    row = lambda scale, at=0.0: at + scale * torch.randn(32, generator=gen, dtype=torch.float64)  # noqa: E731
    tiny = row(0.01)
    tiny[3] = -0.75  # one outlier
    rows = [[row(4), row(60), row(4)], [tiny, row(1000, at=8000), torch.full((32,), 4096.0, dtype=torch.float64)]]
    x = block_laws._rms4(torch.stack([torch.stack(r) for r in rows]).to(dt), dt)
    return layers, x, S.cotangent(tuple(x.shape), dt, 2)


@pytest.mark.hf
def test_the_fused_projections_admit_phi3_through_depth_where_no_other_member_does():
    """HF's Phi-3 takes q, k, v from one product by cat(W_q, W_k, W_v) (and gate, up from one): where the
    branches' contributions to ∂x cancel, that one sum's order decides the depth ratio. On the case (one torch
    thread, as every law runs) Phi-3 errs 13·u·ratio where every other member errs ≤ 1.1 — beyond their allowance
    — and FusedBlock errs as much, so the depth law's oracle admits Phi-3 with it and not without it."""
    pytest.importorskip("transformers", reason="needs the hf extra: pip install -e '.[hf]'")
    dt = torch.float32
    layers, x, v = _fused_case()
    exact, refs, _ = block_laws._reference_ratios(FUSED_CONFIG, layers, x, v, dt)
    phi3 = loading.load("hf-phi3")
    got = block_laws._ratio([build_block(phi3, FUSED_CONFIG, p, dt, "cpu") for p in layers], x, v)
    fused = [cls is baselines.FusedBlock for cls, _ in baselines.STACK_MEMBERS]
    others = [r for r, f in zip(refs, fused, strict=True) if not f]

    def allowed(rs: list[float]) -> float:
        return float(bounds.block_depth_ratio(rs, exact, FUSED_CONFIG, x.shape[1], block_laws.DEPTH, dt).abs[0])

    assert sum(fused) == 1
    assert abs(got - exact) <= allowed(refs)
    _premise(
        abs(got - exact) > allowed(others),
        f"Phi-3's fused product errs {abs(got - exact):.3g}, within the other members' {allowed(others):.3g} "
        "(this CPU's GEMM rounds the fused and the separate products alike on the case)",
    )


class _AlongTheRows(torch.autograd.Function):
    """RMSNorm with a backward of its own, as a compiler writes one: dx by the closed form, dγ summed along the rows
    one row at a time (torch.compile's inductor does so; written here independently of the members)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
        xc = x.to(torch.float32 if x.dtype != torch.float64 else x.dtype)
        r = torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(xc * r, r, w)
        return (xc * r * w.to(xc.dtype)).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        xh, r, w = ctx.saved_tensors
        g = dy.to(xh.dtype)
        gw = g * w.to(xh.dtype)
        dx = r * (gw - xh * (gw * xh).mean(-1, keepdim=True))
        dw = torch.zeros(xh.shape[-1], dtype=xh.dtype)
        for row in (g * xh).reshape(-1, xh.shape[-1]):
            dw = dw + row
        return dx.to(dy.dtype), dw.to(w.dtype), None


class _AlongTheRowsNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _AlongTheRows.apply(x, self.weight, self.eps)


class _AlongTheRowsBlock(nanolm_core.Block):
    norm_cls = _AlongTheRowsNorm


def test_the_row_ordered_members_admit_a_norm_weight_gradient_summed_along_the_rows():
    """A norm's ∂/∂γ summed along the B·T rows one at a time (inductor's order) errs ~√n times torch's cascade
    sum. On 320 nearly constant rows under a cotangent of ones (every row's term alike) it errs beyond the
    allowance of every other member (whose ∂/∂γ is torch's reduction, in every order of D) and within the
    allowance with the row-ordered members."""
    dt, name = torch.float32, "attn_norm.weight"
    config = nanolm_core.ModelConfig(dim=8, n_layers=1, n_heads=1, n_kv_heads=1, vocab_size=8, ffn_dim=16)
    x = torch.from_numpy(1 + 0.05 * np.random.default_rng(6).standard_normal((8, 40, 8))).to(dt)
    params, v = S.block_params(config, dt, 6), torch.ones(x.shape, dtype=dt)
    exact = baselines.block_grads(config, params, x, v, torch.float64, [name], members=1)[0][name]
    block = _AlongTheRowsBlock(config).to(dt)
    block.load_state_dict(params)
    (got,) = torch.autograd.grad(block(x), [block.attn_norm.weight], v)
    refs = baselines.block_grads(config, params, x, v, dt, [name])
    rows = [cls is baselines.RowOrderedBlock for cls, _ in baselines.members_for([name])]
    others = [r[name] for r, o in zip(refs, rows, strict=True) if not o]

    def allowed(rs: list[np.ndarray]) -> float:
        return float(bounds.block_vjp(rs, exact, config, 320, dt).abs.max())

    error = np.abs(got.double().numpy() - exact).max()
    assert sum(rows) == 2
    assert error <= allowed([r[name] for r in refs])
    _premise(
        error > allowed(others),
        f"the row-by-row ∂γ errs {error:.3g}, within the other members' {allowed(others):.3g} (torch's reduction "
        "order over the rows on this CPU)",
    )
