"""Laws of a module's lifecycle: a module computes with the weights and config it has *now*, whatever it did before.

Real code calls a module, then reloads it (``load_state_dict``), updates its weights in place (an optimizer step:
``with torch.no_grad(): p.copy_(…)``), calls it again and again, and keeps several instances of different
configs (eps, rope_theta, sizes) alive in one process. A kernel that caches a derived quantity — a weight cast,
a fused weight buffer, RoPE cos/sin tables — at its first call, or in a class attribute shared by every
instance, computes with stale values from then on.

Each law walks one module (and other instances beside it) through such a life and compares *every* call with
the golden value for the weights and config the module has at that moment, within the derived bound of the
component (``bounds.rmsnorm`` / ``swiglu`` / ``block``). The oracle is golden, not a fresh module of the same
implementation: a class-level cache survives from one example to the next in a process, so a "fresh" module
may already be stale.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

import golden
from properties.library import strategies as S
from properties.library.assertions import assert_matches_golden
from properties.library.harness import (
    build_block,
    build_rmsnorm,
    build_swiglu,
    call,
    note,
    reload,
    update_in_place,
)
from properties.library.subject import Implementation
from properties.library.table import law
from properties.numerics import bounds

AXIS = "module lifecycle: reload, in-place update, repeated calls, several instances"  # its column in the matrix
DType = torch.dtype
Data = st.DataObject


def _gamma(D: int, dtype: DType, seed: int) -> torch.Tensor:
    """A γ of both signs, |γ| ∈ [0.25, 2] (never equal to another draw's: a stale γ shows)."""
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.uniform(0.25, 2.0, D) * rng.choice((-1.0, 1.0), D)).to(dtype)


class _RMSNormLife:
    def __init__(self, impl: Implementation, dtype: DType, device: str) -> None:
        self.impl, self.dtype, self.device = impl, dtype, device

    def check(self, module: torch.nn.Module, x: torch.Tensor, w: torch.Tensor, eps: float, when: str) -> None:
        y = call(module, x.to(self.device), component="RMSNorm")
        assert_matches_golden(
            y, golden.rmsnorm(x, w, eps), bounds.rmsnorm(x, w, eps, self.dtype), what=f"y {when}", record=False
        )


def _rmsnorm_life(
    impl: Implementation, dtype: DType, device: str, c: S.RMSNormCase, o: S.RMSNormCase, seed: int
) -> None:
    """The life of the RMSNorm modules in ``rmsnorm_follows_its_module_lifecycle``, step by step."""
    life, D = _RMSNormLife(impl, dtype, device), c.x.shape[-1]
    w2, w3 = _gamma(D, dtype, seed), _gamma(D, dtype, seed + 1)
    m = build_rmsnorm(impl, c.weight, c.eps, dtype, device)
    life.check(m, c.x, c.weight, c.eps, "at the first call")
    other = build_rmsnorm(impl, o.weight, o.eps, dtype, device)
    life.check(other, o.x, o.weight, o.eps, f"of a second instance (D={o.x.shape[-1]}, eps={o.eps:g})")
    reload(m, {"weight": w2}, dtype, device, "RMSNorm")
    life.check(m, c.x, w2, c.eps, "after load_state_dict with a new γ")
    life.check(other, o.x, o.weight, o.eps, "of the second instance, called again")
    update_in_place(m, {"weight": w3}, "RMSNorm")
    for k in range(2):
        life.check(m, c.x, w3, c.eps, f"after an in-place update of γ (call {k + 1})")


@law("RMSNorm", cost=4)
@given(data=st.data())
def rmsnorm_follows_its_module_lifecycle(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Every call of one RMSNorm matches golden for the γ it has at that moment: after load_state_dict with a new
    γ, after an in-place update of γ, on repeated calls, with another instance (other D, other eps) called in
    between."""
    c = data.draw(S.rmsnorm_cases(dtype, max_dim=256), label="case")
    o = data.draw(S.rmsnorm_cases(dtype, max_dim=256, eps=1e-2 if c.eps != 1e-2 else 1e-5), label="other instance")
    seed = data.draw(st.integers(0, 2**32), label="weight seed")
    note(c)
    _rmsnorm_life(impl, dtype, device, c, o, seed)


def _swiglu_life(impl: Implementation, dtype: DType, device: str, c: S.SwiGLUCase, o: S.SwiGLUCase, seed: int) -> None:
    """The life of the SwiGLU modules in ``swiglu_follows_its_module_lifecycle``, step by step."""
    (F, D), s = c.w_gate.shape, c.scale
    p2 = {n: S.linear_weight(*w.shape, dtype, seed + i, s) for i, (n, w) in enumerate(c.params.items())}
    p3 = {**p2, "w_up.weight": S.linear_weight(F, D, dtype, seed + 7, s)}

    def check(module: torch.nn.Module, x: torch.Tensor, p: dict[str, torch.Tensor], when: str) -> None:
        y = call(module, x.to(device), component="SwiGLU")
        w = [p[n] for n in ("w_gate.weight", "w_up.weight", "w_down.weight")]
        b = bounds.swiglu(x, *w, dtype, random_weights=True)
        assert_matches_golden(y, golden.swiglu(x, *w), b, what=f"y {when}", record=False)

    m = build_swiglu(impl, c.params, dtype, device)
    check(m, c.x, c.params, "at the first call")
    other = build_swiglu(impl, o.params, dtype, device)
    check(other, o.x, o.params, f"of a second instance (D={o.x.shape[-1]}, F={o.w_gate.shape[0]})")
    reload(m, p2, dtype, device, "SwiGLU")
    check(m, c.x, p2, "after load_state_dict with new weights")
    update_in_place(m, {"w_up.weight": p3["w_up.weight"]}, "SwiGLU")
    for k in range(2):
        check(m, c.x, p3, f"after an in-place update of w_up (call {k + 1})")
    check(other, o.x, o.params, "of the second instance, called again")


@law("SwiGLU", cost=4)
@given(data=st.data())
def swiglu_follows_its_module_lifecycle(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Every call of one SwiGLU matches golden for the weights it has at that moment: after load_state_dict with
    new weights, after an in-place update of one matrix, on repeated calls, with another instance (other D, F)
    called in between."""
    c = data.draw(S.swiglu_cases(dtype, max_dim=32), label="case")
    o = data.draw(S.swiglu_cases(dtype, max_dim=32), label="other instance")
    seed = data.draw(st.integers(0, 2**32), label="weight seed")
    note(c)
    _swiglu_life(impl, dtype, device, c, o, seed)


def _far_theta(theta: float) -> float:
    """A RoPE base far from ``theta`` (angles at position t ≥ 1 differ by ≫ the bound's reach)."""
    return 10.0 if theta >= 1000.0 else 10000.0


class BlockLife(NamedTuple):
    """A Block case (T ≥ 2: RoPE angles past position 0 differ with θ), a third instance's case, a weight seed."""

    case: S.BlockCase
    other: S.BlockCase
    seed: int

    def describe(self) -> dict[str, object]:
        return {**self.case.describe(), "third instance": self.other.describe()["config"]}


@st.composite
def _block_lives(draw: st.DrawFn, dtype: DType) -> BlockLife:
    c = draw(S.block_cases(dtype, max_dim=32, max_tokens=3), label="case")
    if c.x.shape[1] < 2:
        c = c._replace(x=torch.cat([c.x, c.x.flip(-1)], dim=1))
    o = draw(S.block_cases(dtype, max_dim=32, max_tokens=3), label="third instance")
    return BlockLife(c, o, draw(st.integers(0, 2**32), label="weight seed"))


def _pinned_life(dtype: DType) -> BlockLife:
    other = S.BLOCK_PINS["GQA H=4 G=2"].build(dtype)
    config = S.fixed_config(H=2, G=1, K=6, F=20)
    x = torch.from_numpy(np.random.default_rng(5).standard_normal((2, 3, config.dim))).to(dtype)
    third = S.BlockCase(config, x, S.block_params(config, dtype, seed=13), 1.0, 1.0)
    return BlockLife(other, third, 17)


LIFE_PINS = {"GQA H=4 G=2, T=4, θ=10⁴ beside θ=10": S.Pin("GQA H=4 G=2, T=4", _pinned_life)}


def _block_life(impl: Implementation, dtype: DType, device: str, life: BlockLife) -> None:
    """The life of the Block modules in ``block_follows_its_module_lifecycle``, step by step."""
    c, o, seed = life
    cfg = c.config
    twin = dataclasses.replace(
        cfg, rope_theta=_far_theta(cfg.rope_theta), norm_eps=1e-5 if cfg.norm_eps != 1e-5 else 1e-6
    )
    p2 = S.block_params(cfg, dtype, seed, c.scale, c.logit_scale)
    p3 = {**p2, "attn.wv.weight": S.block_params(cfg, dtype, seed + 1, c.scale)["attn.wv.weight"]}
    longer = torch.cat([c.x, c.x.flip(1)], dim=1)  # T → 2T: tables for new positions

    def check(module: torch.nn.Module, x: torch.Tensor, p: dict, config, when: str) -> None:
        y = call(module, x.to(device), component="Block")
        b = bounds.block(x, p, config, dtype, random_weights=True, drawn=True)  # (model_rows: not constant ones)
        assert_matches_golden(y, golden.block(x, p, config), b, what=f"out {when}", record=False)

    m = build_block(impl, cfg, c.params, dtype, device)
    check(m, c.x, c.params, cfg, "at the first call")
    second = build_block(impl, twin, c.params, dtype, device)
    check(second, c.x, c.params, twin, f"of a second instance (rope_theta={twin.rope_theta:g}, eps={twin.norm_eps:g})")
    third = build_block(impl, o.config, o.params, dtype, device)
    check(third, o.x, o.params, o.config, "of a third instance (other sizes)")
    reload(m, p2, dtype, device, "Block")
    check(m, longer, p2, cfg, f"after load_state_dict with new weights, T={longer.shape[1]}")
    update_in_place(m, {"attn.wv.weight": p3["attn.wv.weight"]}, "Block")
    check(m, longer, p3, cfg, "after an in-place update of attn.wv")
    check(second, c.x, c.params, twin, "of the second instance, called again")


@law("Block", dtypes=(torch.float32,), cost=8)
@given(data=st.data())
@example(data=LIFE_PINS["GQA H=4 G=2, T=4, θ=10⁴ beside θ=10"])
def block_follows_its_module_lifecycle(impl: Implementation, dtype: DType, device: str, data: Data) -> None:
    """Every call of one Block matches golden for the weights and config it has at that moment: with a second
    instance of another rope_theta and eps (same sizes) and a third of other sizes called in between, after
    load_state_dict with new weights and a longer sequence, after an in-place update of attn.wv."""
    life = data.draw(_block_lives(dtype), label="case")
    note(life)
    _block_life(impl, dtype, device, life)
