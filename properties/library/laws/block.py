"""Laws of the pre-norm Block: h = x + attn(RMSNorm₁(x)), out = h + SwiGLU(RMSNorm₂(h)), x of shape (B, T, D).

attn is causal grouped-query attention with rotate-half RoPE (DESIGN). Derivative laws compare against the
fp64 derivative of the reference block (nanolm_core) on the same weights; their allowance
(``bounds.block_vjp``) is twice the largest error of the same-dtype baselines (``baselines``: the reference in
several orders and conventions; the flash-attention oracle) plus 4·u of the result's scale (in fp64 the reference
*is* the oracle: the baselines' spread measures its accuracy, u floored at 2^-40).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

import golden
import nanolm_core
from properties.library import baselines, protocols
from properties.library import regimes as R
from properties.library import strategies as S
from properties.library.assertions import (
    as_f64,
    assert_batch_invariant,
    assert_bitwise_equal,
    assert_close,
    assert_matches_golden,
    assert_unchanged,
)
from properties.library.assertions import fail as _fail
from properties.library.components import record
from properties.library.context import count_examples, measure
from properties.library.harness import backward, call, gradcheck, note
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

DType = torch.dtype
Data = st.DataObject


ZEROED = ("attn.wo.weight", "ffn.w_down.weight")
RECORD = record("Block")


def build_block(
    impl: Implementation, config: nanolm_core.ModelConfig, params: dict[str, torch.Tensor], dtype: DType, device: str
) -> torch.nn.Module:
    """Block(config) with the contract's state_dict loaded (the record's build: seen through
    ``rope_layout.RopeLayout`` when the Block declares ``rope_layout: "interleaved"``)."""
    return RECORD.build(impl, RECORD.case((), params, config=config), dtype, device)


def block_forward(
    impl: Implementation,
    x: torch.Tensor,
    config: nanolm_core.ModelConfig,
    params: dict[str, torch.Tensor],
    dtype: DType,
    device: str,
    *,
    output_cause: str = "contract",
) -> torch.Tensor:
    """y = impl.Block(config)(x) with ``params`` loaded; y must keep x's shape, dtype and device."""
    __tracebackhide__ = True
    case = RECORD.case((x,), params, config=config)
    return RECORD.forward(impl, case, dtype, device, output_cause=output_cause)[0]


@law("Block", cost=2)
@given(data=st.data())
@example(data=S.SHARP_BLOCK_PINS["GQA H=4 G=2"])
@S.pinned(S.LOGIT_PINS)
@S.pinned(R.MAGNITUDE_PINS)
@protocols.honoured(protocols.FORWARD, pin=S.BLOCK_PROTOCOL_PIN)
def block_matches_golden(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """|out − golden| ≤ bounds.block elementwise for the pre-norm block (GQA with G = 1, G = H and 1 < G < H; sharp
    attention, RoPE angles of radians; random rows also within the probabilistic tier)."""
    sc = data.draw(S.sharp_block_cases(dtype, max_dim=32, max_tokens=6), label="case")
    c = sc.case if isinstance(sc, S.SharpBlockCase) else sc  # (the pins are BlockCases)
    note(sc)
    y = block_forward(impl, c.x, c.config, c.params, dtype, device)
    b = bounds.block(c.x, c.params, c.config, dtype, random_weights=True, drawn=True)
    assert_matches_golden(y, golden.block(c.x, c.params, c.config), b)


@law("Block")
@given(data=st.data())
def block_is_identity_when_branches_are_zeroed(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """With attn.wo = 0 and ffn.w_down = 0 the block is the identity: out = x bitwise and ∂out/∂x = I exactly."""
    c = data.draw(S.block_cases(dtype), label="case")
    note(c)
    params = {k: torch.zeros_like(v) if k in ZEROED else v for k, v in c.params.items()}
    module = build_block(impl, c.config, params, dtype, device)
    x = c.x.to(device).requires_grad_(True)
    y = call(module, x, component="Block", grad=True)
    assert_bitwise_equal(y.detach(), c.x, what="out with zeroed branches", why="out = x + 0 + 0")
    v = S.cotangent(tuple(c.x.shape), dtype, 0).to(device)
    (dx,) = backward(y, v, [x], component="Block")
    assert_bitwise_equal(dx, v, what="vᵀ·∂out/∂x with zeroed branches", why="the Jacobian is exactly I")


def _vjp(module: torch.nn.Module, x: torch.Tensor, v: torch.Tensor, component: str = "Block") -> torch.Tensor:
    x = x.detach().clone().requires_grad_(True)
    (dx,) = backward(call(module, x, component=component, grad=True), v, [x], component=component)
    if dx is None:
        _fail(f"{component}: out does not depend on x in autograd (no gradient)")
    return dx


def _reference(
    config: nanolm_core.ModelConfig, params: dict[str, torch.Tensor], dtype: torch.dtype, cls: type = nanolm_core.Block
) -> torch.nn.Module:
    module = cls(config).to(dtype=dtype)
    module.load_state_dict({k: v.to(dtype) for k, v in params.items()}, strict=True)
    return module


@law("Block", cost=2)
@given(data=st.data())
@example(data=S.BACKWARD_PINS[f"T={S.BACKWARD_T}"])
@S.pinned(R.MAGNITUDE_PINS)
@protocols.honoured(protocols.GRADIENT, pin=S.BLOCK_PROTOCOL_PIN)
def block_jacobian_is_identity_plus_branch(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """vᵀ∂out/∂x = vᵀ(I + J_branch) matches the fp64 derivative within 2·(the baselines' largest error) + 4·u·‖vᵀJ‖∞."""
    c = data.draw(S.block_cases(dtype, max_dim=32, max_tokens=4), label="case")
    note(c)
    v = S.cotangent(tuple(c.x.shape), dtype, 1)
    got = as_f64(_vjp(build_block(impl, c.config, c.params, dtype, device), c.x.to(device), v.to(device)))
    exact = as_f64(_vjp(_reference(c.config, c.params, torch.float64), c.x.double(), v.double()))
    refs = [g["x"] for g in baselines.block_grads(c.config, c.params, c.x, v, baselines.baseline_dtype(dtype))]
    b = bounds.block_vjp(refs, exact, c.config, c.x.shape[1], dtype)
    assert_close(got, exact, b, what="vᵀ∂out/∂x", expected_name="fp64 derivative")


@law("Block")
@given(data=st.data())
@example(data=S.CAUSAL_PINS["T=1024, t=700"])
def block_is_causal(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Changing tokens t, t+1, … leaves the outputs of tokens 0 … t−1 bitwise unchanged."""
    cc = data.draw(S.causal_cases(dtype), label="case")
    note(cc)
    c = cc.case
    y, y2 = (block_forward(impl, v, c.config, c.params, dtype, device) for v in (c.x, cc.other))
    assert_bitwise_equal(
        y2[:, : cc.t], y[:, : cc.t], what=f"outputs of tokens < {cc.t}", why=f"tokens ≥ {cc.t} changed"
    )


@law("Block", cost=2)
@given(data=st.data())
def block_is_batch_invariant(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """out(x[:k]) and out(x)[:k] agree within 2·bound over the batch dimension, and whether bitwise is measured and
    reported (the projections are GEMMs over B·T rows, not batch-invariant on the CPU); bitwise equality is required
    when declared ``batch_invariant: True``."""
    c = data.draw(S.block_cases(dtype, max_dim=32, max_tokens=4), label="case")
    note(c)
    x = c.x if c.x.shape[0] > 1 else torch.cat([c.x, c.x.roll(1, dims=-1)])  # two sequences at least
    k = data.draw(st.integers(1, x.shape[0] - 1), label="k")
    full = block_forward(impl, x, c.config, c.params, dtype, device)
    part = block_forward(impl, x[:k].contiguous(), c.config, c.params, dtype, device)
    b = bounds.between(bounds.block(x[:k], c.params, c.config, dtype, random_weights=True))
    assert_batch_invariant(part, full[:k], b, what=f"out(x[:{k}]) vs out(x)[:{k}]")


@law("Block")
@given(data=st.data())
def block_preserves_shape_dtype_device(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """out has x's shape (B, T, D), dtype and device."""
    c = data.draw(S.block_cases(dtype), label="case")
    note(c)
    block_forward(impl, c.x, c.config, c.params, dtype, device, output_cause="law")  # this law's own assertion


@law("Block")
@given(data=st.data())
def block_does_not_modify_input(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """The call leaves x and every weight bitwise unchanged."""
    c = data.draw(S.block_cases(dtype), label="case")
    note(c)
    module, x = build_block(impl, c.config, c.params, dtype, device), c.x.to(device)
    before = x.clone()
    call(module, x, component="Block")
    assert_unchanged(before, x, what="input x")
    params = dict(module.named_parameters())
    for name, value in c.params.items():
        assert_unchanged(value.to(device), params[name], what=name)


@law("Block", dtypes=(torch.float64,))
@given(data=st.data())
def block_gradients_pass_gradcheck(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """In fp64 the backward pass (x and every weight) agrees with finite differences (gradcheck)."""
    c = data.draw(S.block_cases(dtype, max_dim=16, max_tokens=3), label="case")
    note(c)
    module = build_block(impl, c.config, c.params, dtype, device)
    names = list(c.params)
    inputs = (c.x.to(device).requires_grad_(True), *(c.params[n].to(device).requires_grad_(True) for n in names))

    def f(x: torch.Tensor, *weights: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(module, dict(zip(names, weights, strict=True)), (x,))

    gradcheck(f, inputs, component="Block", module=module)


DEPTH = 4


def _ratio(blocks: list[torch.nn.Module], x: torch.Tensor, v: torch.Tensor) -> float:
    """‖vᵀ ∂(stack(x))/∂x‖ / ‖v‖ through the blocks applied in order."""
    return float(_vjp(torch.nn.Sequential(*blocks), x, v, "Block stack").double().norm() / v.double().norm())


def _rms4(x: torch.Tensor, dtype: DType) -> torch.Tensor:
    """x rescaled to rms(x) = 4 (a residual stream well above the branches' scale)."""
    return (x.double() * 4 / x.double().square().mean().sqrt().clamp_min(1e-3)).to(dtype)


def _reference_ratios(
    config: nanolm_core.ModelConfig,
    layers: list[dict[str, torch.Tensor]],
    x: torch.Tensor,
    v: torch.Tensor,
    dtype: DType,
) -> tuple[float, list[float], float]:
    """The ratio of the reference stack in fp64 (the oracle), of each baseline's stack (``baselines.STACK_MEMBERS``,
    in ``baselines.baseline_dtype``), and of a post-norm stack in fp64."""

    def ratio(t: DType, cls: type, seed: int = 0) -> float:
        blocks = [_reference(config, p, t, cls) for p in layers]
        if cls is baselines.RandomlyRoundedBlock:
            blocks = [b.seeded(seed * len(layers) + i) for i, b in enumerate(blocks)]
        return _ratio(blocks, x.to(t), v.to(t))

    refs = [ratio(baselines.baseline_dtype(dtype), cls, k) for cls, k in baselines.STACK_MEMBERS]
    return ratio(torch.float64, nanolm_core.Block), refs, ratio(torch.float64, nanolm_core.PostNormBlock)


@law("Block", cost=2)
@given(data=st.data())
def block_preserves_gradient_through_depth(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Through L = 4 stacked blocks (rms(x) = 4, small branches) ‖vᵀ∂out/∂x‖/‖v‖ matches the fp64 pre-norm
    reference within 2·(the baselines' largest error) + 4·u·ratio (the identity path keeps it ≈ 1; post-norm
    rescales it at every layer — measured)."""
    c = data.draw(S.block_cases(dtype, max_dim=32, max_tokens=3), label="case")
    seeds = data.draw(st.lists(st.integers(0, 2**32), min_size=DEPTH, max_size=DEPTH), label="layer seeds")
    note(c)
    layers = [S.block_params(c.config, dtype, s, scale=2.0**-3) for s in seeds]
    x, v = _rms4(c.x, dtype), S.cotangent(tuple(c.x.shape), dtype, 2)
    got = _ratio([build_block(impl, c.config, p, dtype, device) for p in layers], x.to(device), v.to(device))
    exact, refs, post = _reference_ratios(c.config, layers, x, v, dtype)
    measure("gradient norm ratio (impl, pre-norm fp64, post-norm fp64)", [got, exact, post])
    b = bounds.block_depth_ratio(refs, exact, c.config, x.shape[1], DEPTH, dtype)
    assert_close(np.array([got]), np.array([exact]), b, what="‖vᵀ∂out/∂x‖/‖v‖", expected_name="fp64 pre-norm")


# Llama-shaped configs where 256-rounding keeps F ≠ 4D (D = 64 would hide F = 4D: 256 = 4·64).
PARAM_CONFIGS = (
    nanolm_core.ModelConfig(dim=96, n_heads=4, n_kv_heads=2),  # F = 256 ≠ 384
    nanolm_core.ModelConfig(dim=48, n_heads=6, n_kv_heads=3, ffn_dim=40),  # explicit F, 1 < G < H
    nanolm_core.ModelConfig(dim=4096, n_heads=32, n_kv_heads=32, max_seq_len=4096),  # Llama-7B: F = 11008
    nanolm_core.ModelConfig(dim=4096, n_heads=32, n_kv_heads=8, ffn_dim=14336),  # Llama-3-8B
)


def _meta_block(impl: Implementation, config: nanolm_core.ModelConfig) -> torch.nn.Module | None:
    """Block(config) built on the meta device (Llama sizes without memory); small configs fall back to the CPU.
    None: a large config that cannot be built on the meta device."""
    factory = impl.factory("Block")
    try:
        with torch.device("meta"):
            return factory(config)
    except NotImplementedError:
        raise
    except Exception:
        return None if config.dim > 512 else factory(config)


def llama_block_parameters(config: nanolm_core.ModelConfig) -> int:
    """2D + D·H·K + 2·D·G·K + H·K·D + 3·D·F."""
    D, H, G, K, F = config.dim, config.n_heads, config.n_kv_heads, config.head_dim, config.ffn_dim
    return 2 * D + D * H * K + 2 * D * G * K + H * K * D + 3 * D * F


@law("Block", dtypes=(torch.float32,))
def block_has_llama_parameter_count(impl: Implementation, dtype: DType, device: str) -> None:
    """Block(config) has 2D + D·H·K + 2·D·G·K + H·K·D + 3·D·F parameters, F = config.ffn_dim (D=4096 → 11008)."""
    for config in PARAM_CONFIGS:
        module = _meta_block(impl, config)
        if module is None:
            continue  # a Llama-sized config that cannot be built on the meta device; the small ones still count
        count = sum(p.numel() for p in module.parameters())
        if count != llama_block_parameters(config):
            _fail(
                f"Block parameter count {count:,} ≠ 2D + D·H·K + 2·D·G·K + H·K·D + 3·D·F = "
                f"{llama_block_parameters(config):,} for {dataclasses.replace(config)} (F = {config.ffn_dim}); "
                f"shapes { {n: tuple(p.shape) for n, p in module.named_parameters()} }"
            )
        count_examples(1)


def _param_grads(module: torch.nn.Module, x: torch.Tensor, v: torch.Tensor, names: list[str]) -> list[np.ndarray]:
    x = x.detach().clone().requires_grad_(True)
    params = dict(module.named_parameters())
    y = call(module, x, component="Block", grad=True)
    grads = backward(y, v, [x, *(params[n] for n in names)], component="Block")
    for name, g in zip(["x", *names], grads, strict=True):
        if g is None:
            _fail(f"Block backward gives no gradient for {name}")
    return [as_f64(g) for g in grads]


@law("Block", cost=4)
@given(data=st.data())
@example(data=S.PARAM_GRAD_PINS["GQA H=4 G=2, 80 rows"])
@protocols.honoured(protocols.GRADIENT)
def block_parameter_gradients_match_fp64(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """On B·T = 80 rows, dx and the gradient of every weight (norms, W_q, W_k, W_v, W_o, W_gate, W_up, W_down)
    match the fp64 derivative of the reference within bounds.block_vjp: 2·max|ref_t − fp64| over the baselines
    + 4·u·max|∂|, per tensor."""
    c = data.draw(S.param_grad_cases(dtype), label="case").case
    note(c)
    names, rows = list(c.params), c.x.shape[0] * c.x.shape[1]
    v = S.cotangent(tuple(c.x.shape), dtype, 4)
    got = _param_grads(build_block(impl, c.config, c.params, dtype, device), c.x.to(device), v.to(device), names)
    exact = _param_grads(_reference(c.config, c.params, torch.float64), c.x.double(), v.double(), names)
    refs = baselines.block_grads(c.config, c.params, c.x, v, baselines.baseline_dtype(dtype), names)
    for name, g, e in zip(["x", *names], got, exact, strict=True):
        b = bounds.block_vjp([r[name] for r in refs], e, c.config, rows, dtype)
        assert_close(g, e, b, what=f"∂/∂{name} over {rows} rows", expected_name="fp64 derivative")


# ---------------------------------------------------------------------------------------------- the sequence dimension
# Every earlier token is visible to every later one, at long sequence lengths too. A sliding window, an attention
# restarted every chunk, or a block of keys skipped changes nothing while T is short. The reach law isolates the
# path from one token j to the later tokens so that its answer is exact in floating point for every correct
# implementation: the sequence is zero except token j, W_q = W_k = 0 (every score is exactly 0, so attention is
# exactly uniform: p = 1/(t+1) rounded, never 0), W_v and W_o are coordinate selections, and W_down = 0. Then
# out_t = p_t·v_j exactly rounded, coordinate by coordinate (every other term is an exact zero): non-zero for
# every t > j — and exactly 0 for t < j (causality).
def reach_params(case: S.BlockCase) -> dict[str, torch.Tensor]:
    """W_q = W_k = 0, W_v = the first G·K coordinates, W_o = I, W_down = 0; the norms and W_gate, W_up as drawn."""
    c, p = case.config, case.params
    D, GK = c.dim, c.n_kv_heads * c.head_dim
    eye = torch.eye(D, dtype=p["attn.wo.weight"].dtype)
    zero = {k: torch.zeros_like(p[k]) for k in ("attn.wq.weight", "attn.wk.weight", "ffn.w_down.weight")}
    return {**p, **zero, "attn.wv.weight": eye[:GK].contiguous(), "attn.wo.weight": eye}


def _assert_reaches(later: np.ndarray, j: int, T: int) -> None:
    """Every later token's output (rows of ``later``: tokens j+1 … T−1) is finite and non-zero in every coordinate."""
    broken = np.flatnonzero((~np.isfinite(later)).any(axis=-1))  # NaN ≠ 0, but it is no reach: p·v_j is finite
    if broken.size:
        _fail(f"out[0, {j + 1 + int(broken[0])}] is not finite (exact: p·v_j, finite): {broken.size} later tokens")
    blind = np.flatnonzero((later == 0).any(axis=-1))
    if blind.size:
        t = j + 1 + int(blind[0])
        _fail(
            f"token {j} does not reach token {t} (out[0, {t}] has {int((later[blind[0]] == 0).sum())} zero "
            f"coordinates; exact: p·v_j ≠ 0 in each): {blind.size} of {later.shape[0]} later tokens blind to it, "
            f"first {t}, last {j + 1 + int(blind[-1])} (T = {T})"
        )


@law("Block", cost=4)
@given(data=st.data())
@example(data=S.REACH_PINS[f"T={S.LONG_T}, j=0"])
@example(data=S.REACH_PINS[f"T={S.LONGEST_T}, j=0"])
def block_every_earlier_token_reaches_the_last(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Token j reaches every later token, up to the last (j = 0 at T = 1024 included, and at T = 4097 in fp32: no
    window, no restart, no skipped block or chunk) and no earlier one: with x zero but token j, W_q = W_k = 0,
    W_v, W_o selections and W_down = 0, out_t = p_t·v_j ≠ 0 in every coordinate for t > j and out_t = 0 exactly
    for t < j."""
    rc = data.draw(S.reach_cases(dtype), label="case")
    if rc is None:  # a pin of another dtype
        count_examples(-1)
        assume(False)
    note(rc)
    c, j = rc.case, rc.j
    y = block_forward(impl, c.x, c.config, reach_params(c), dtype, device)
    assert_bitwise_equal(y[:, :j], torch.zeros_like(c.x[:, :j]), what=f"out of tokens < {j}", why="causal")
    assert_bitwise_equal(y[1:], torch.zeros_like(c.x[1:]), what="out of the other (all-zero) sequences")
    _assert_reaches(as_f64(y[0, j + 1 :]), j, c.x.shape[1])


# ---------------------------------------------------------------------------------------------- parameter budget
# The FFN width the implementation builds from a ModelConfig. (The ModelConfig arithmetic itself — F = 256·⌈(8D/3)
# /256⌉, tying saves V·D — is tested in tests/core/test_budget.py.)
def _on_meta(impl: Implementation, config: nanolm_core.ModelConfig) -> torch.nn.Module:
    """Block(config) built on the meta device; a failure to build there fails the law."""
    try:
        with torch.device("meta"):
            return impl.factory("Block")(config)
    except NotImplementedError:
        raise
    except Exception as exc:
        _fail(f"Block({config}) cannot be constructed on the meta device: {type(exc).__name__}: {exc}")


@law("Block", dtypes=(torch.float32,))
def block_ffn_dim_is_8d_over_3(impl: Implementation, dtype: DType, device: str) -> None:
    """Block(config).ffn uses F = config.ffn_dim = 256·⌈(8D/3)/256⌉ hidden units (D = 4096 → 11008, not 4D)."""
    for D, H in ((96, 4), (384, 6), (4096, 32)):
        config = nanolm_core.ModelConfig(dim=D, n_heads=H, n_kv_heads=H)
        module = _on_meta(impl, config)
        shape = tuple(dict(module.named_parameters())["ffn.w_gate.weight"].shape)
        if shape != (config.ffn_dim, D):
            _fail(
                f"Block(dim={D}).ffn.w_gate.weight has shape {shape} ≠ (F, D) = ({config.ffn_dim}, {D}); "
                f"F must be 256·⌈(8D/3)/256⌉ = {config.ffn_dim} (4D would be {4 * D})"
            )
        count_examples(1)
