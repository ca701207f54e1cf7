"""The pass/fail bounds are sound for every accepted reduction order, and still catch low-precision accumulation.

Soundness: RMSNorm's Σx², SwiGLU's dot products, and attention's dot products and softmax sum are evaluated in
every order of ``tests/numerics/orders.py`` (sequential, reversed, L-lane sequential for L = 2 … 128, pairwise,
blocked BLAS, split-K, Kahan, FMA), emulated exactly in the compute dtype, on adversarial rows (constant, same
sign, a ramp, one outlier, mixed scales, log-uniform magnitudes, non-zero mean; D up to 16384), in every dtype,
and compared with the golden value: |error| ≤ bound.abs for every element (the bound the laws use: the
random-sign propagation for drawn random weights, the deterministic one for structured weights).

Power: an accumulation in bf16 or fp16 (the pitfall) exceeds the same bounds. The worst error/bound per order
and dtype is printed (``-s``) and recorded as a test property.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import golden
from golden.formats import FORMATS
from nanolm_core import ModelConfig
from properties.numerics import bounds, ulp
from tests.common.cases import adversarial_rows, exact_in
from tests.numerics import orders

DTYPES = [f.dtype for f in reversed(FORMATS)]
IDS = [f.name for f in reversed(FORMATS)]
EPS = 1e-6
RMS_DIMS = (1, 2, 3, 7, 64, 760, 2048, 4096, 16384)


def _ratio(y: np.ndarray, gold: golden.Golden, b: bounds.Bound, dtype: torch.dtype) -> float:
    """max |y − golden| / bound.abs over the judged elements (y already rounded to dtype)."""
    err = ulp.abs_error(torch.from_numpy(y).to(dtype), gold)
    judged = np.isfinite(b.abs)
    return float(np.max(np.where(judged & (err > 0), err / b.abs, 0.0)))


def _report(record_property, title: str, worst: dict[str, float]) -> None:
    record_property(title, {k: round(v, 4) for k, v in worst.items()})
    print(f"\n{title}: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(worst.items(), key=lambda kv: -kv[1])))


# ------------------------------------------------------------------------------------------- RMSNorm
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_rmsnorm_bound_holds_for_every_reduction_order(dtype: torch.dtype, record_property) -> None:
    conventions = [False, True] if dtype in (torch.float16, torch.bfloat16) else [False]
    worst: dict[str, float] = {}
    for D in RMS_DIMS:
        x = adversarial_rows(D, dtype)
        w = exact_in(1 + 0.5 * np.random.default_rng(D).standard_normal(D), dtype)
        xt, wt = torch.from_numpy(x).to(dtype), torch.from_numpy(w).to(dtype)
        gold, b = golden.rmsnorm(xt, wt, EPS), bounds.rmsnorm(xt, wt, EPS, dtype)
        for order in orders.ORDERS:
            for hf in conventions:
                y = orders.rmsnorm(x, w, EPS, dtype, order, hf=hf)
                key = order + (" (HF)" if hf else "")
                worst[key] = max(worst.get(key, 0.0), _ratio(y, gold, b, dtype))
    _report(record_property, f"rmsnorm {IDS[DTYPES.index(dtype)]} worst error/bound", worst)
    bad = {k: v for k, v in worst.items() if v > 1.0}
    assert not bad, f"orders outside the bound: {bad}"


@pytest.mark.parametrize(
    ("acc", "D"), [(torch.bfloat16, 256), (torch.bfloat16, 4096), (torch.float16, 1024), (torch.float16, 4096)]
)
def test_low_precision_accumulation_of_the_sum_of_squares_exceeds_the_bound(acc: torch.dtype, D: int) -> None:
    """Σx² accumulated in bf16/fp16 (each partial sum rounded to it): the pitfall, outside the bound of that dtype."""
    x = adversarial_rows(D, acc)[2:4]  # one-sign rows: the partial sums grow and stagnate
    xt = torch.from_numpy(x).to(acc)
    S = np.zeros(x.shape[0], np.float32)
    for k in range(D):
        S = orders.to_t(S + orders.to_t(x[:, k] ** 2, acc), acc)
    r = np.float32(1) / np.sqrt(S[:, None] / np.float32(D) + np.float32(EPS))
    y = orders.to_t(x.astype(np.float32) * r, acc)
    ones = torch.ones(D, dtype=acc)
    assert _ratio(y, golden.rmsnorm(xt, ones, EPS), bounds.rmsnorm(xt, ones, EPS, acc), acc) > 1.0


# -------------------------------------------------------------------------------------------- SwiGLU
SWIGLU_SHAPES = [(16384, 3), (3, 16384), (760, 40)]


def _swiglu_weights(D: int, F: int, kind: str, dtype: torch.dtype) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(D * 7 + F)
    if kind == "random":  # the laws' weights: independent, symmetric
        ws = [rng.standard_normal(s) / np.sqrt(s[1]) for s in ((F, D), (F, D), (D, F))]
    else:  # one sign: every dot product of a one-sign row sums terms of one sign (errors correlate)
        ws = [rng.uniform(0.5, 1.5, s) / s[1] for s in ((F, D), (F, D), (D, F))]
    return tuple(exact_in(w, dtype) for w in ws)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_swiglu_bound_holds_for_every_reduction_order(dtype: torch.dtype, record_property) -> None:
    narrow = dtype in (torch.float16, torch.bfloat16)
    dot_orders = orders.DOT_ORDERS if dtype != torch.float64 else orders.ORDERS
    worst: dict[str, float] = {}
    for D, F in SWIGLU_SHAPES:
        x = np.clip(adversarial_rows(D, dtype)[[0, 2, 3, 5, 7]], -8, 8)
        for kind in ("random", "one-sign"):
            W = _swiglu_weights(D, F, kind, dtype)
            xt, Wt = torch.from_numpy(x).to(dtype), [torch.from_numpy(w).to(dtype) for w in W]
            gold = golden.swiglu(xt, *Wt)
            b = bounds.swiglu(xt, *Wt, dtype, random_weights=kind == "random")
            for order in dot_orders:
                fused, hf = orders.swiglu(x, *W, dtype, order)
                for key, y in ((order, fused), (order + " (HF)", hf)):
                    if narrow or y is fused:  # in fp32/fp64 both conventions are the same arithmetic
                        worst[key] = max(worst.get(key, 0.0), _ratio(y, gold, b, dtype))
    _report(record_property, f"swiglu {IDS[DTYPES.index(dtype)]} worst error/bound", worst)
    bad = {k: v for k, v in worst.items() if v > 1.0}
    assert not bad, f"orders outside the bound: {bad}"


def test_swiglu_accumulating_its_dot_products_in_bf16_exceeds_the_bound() -> None:
    """The dot products of W_gate/W_up accumulated in bf16 (every partial sum rounded): outside the bound."""
    D, F, dtype = 256, 3, torch.bfloat16
    x = np.clip(adversarial_rows(D, dtype)[[2, 3, 7]], -8, 8)
    W = _swiglu_weights(D, F, "random", dtype)

    def bf16_dot(a: np.ndarray, Wm: np.ndarray) -> np.ndarray:
        acc = np.zeros((a.shape[0], Wm.shape[0]), np.float32)
        for k in range(a.shape[1]):
            acc = orders.to_t(acc + a[:, None, k].astype(np.float32) * Wm[None, :, k].astype(np.float32), dtype)
        return acc

    g, u = bf16_dot(x, W[0]), bf16_dot(x, W[1])
    h = orders.to_t(orders.to_t(g / (1 + np.exp(-g.astype(np.float64))), dtype) * u, dtype)
    y = orders.to_t(orders.matvec(h.astype(np.float32), W[2].astype(np.float32), "pairwise"), dtype)
    xt, Wt = torch.from_numpy(x).to(dtype), [torch.from_numpy(w).to(dtype) for w in W]
    assert _ratio(y, golden.swiglu(xt, *Wt), bounds.swiglu(xt, *Wt, dtype, random_weights=True), dtype) > 1.0


# ----------------------------------------------------------------------------------------- attention
ATTENTION_SHAPES = [(64, 2, 1, 128), (128, 4, 2, 32), (512, 4, 4, 6)]  # (D, H, G, T): K = 32, 32, 128


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_attention_bound_holds_for_every_reduction_order(dtype: torch.dtype, record_property) -> None:
    dot_orders = orders.DOT_ORDERS if dtype != torch.float64 else orders.ORDERS
    worst: dict[str, float] = {}
    for D, H, G, T in ATTENTION_SHAPES:
        cfg = ModelConfig(dim=D, n_heads=H, n_kv_heads=G, max_seq_len=T)
        rows = adversarial_rows(D, dtype, seed=T)
        x = np.clip(rows[np.arange(T) % rows.shape[0]], -8, 8)[None]  # (1, T, D): every kind, repeated
        K = D // H
        rng = np.random.default_rng(D + T)
        W = [exact_in(rng.standard_normal((n, m)) / np.sqrt(m), dtype) for n, m in ((H * K, D), (G * K, D))]
        W += [exact_in(rng.standard_normal((G * K, D)) / np.sqrt(D), dtype)]
        W += [exact_in(rng.standard_normal((D, H * K)) / np.sqrt(H * K), dtype)]
        xt, Wt = torch.from_numpy(x).to(dtype), [torch.from_numpy(w).to(dtype) for w in W]
        gold = golden.attention(xt, *Wt, cfg)
        b = bounds.attention(xt, *Wt, cfg, dtype, random_weights=True)
        for order in dot_orders:
            y = orders.attention(x, tuple(W), H, G, cfg.rope_theta, dtype, order)
            worst[order] = max(worst.get(order, 0.0), _ratio(y, gold, b, dtype))
    _report(record_property, f"attention {IDS[DTYPES.index(dtype)]} worst error/bound", worst)
    bad = {k: v for k, v in worst.items() if v > 1.0}
    assert not bad, f"orders outside the bound: {bad}"
