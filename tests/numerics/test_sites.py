"""The probabilistic tier's coefficients are exact: perturbing one stage of an emulated Block by independent relative
errors δ ~ U[−β, β] moves the output with a variance at most — and of the order of — what ``sites.block`` charges
that stage's sites (β²/3 per unit of variance proxy: the variance of U[−β, β]).

The emulation (``tests/numerics/orders.block``) runs in float64 with β = 2⁻³⁰, so its own roundings are negligible
and the response to the perturbation is first order; ``sites.block`` is evaluated with u = β. Each stage maps onto
the site classes that cover it (``sites.TRACE``); a coefficient left out or too small would show as an empirical
variance above the charge, a grossly loose one as a ratio far below it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nanolm_core import ModelConfig
from properties.library import strategies as S
from properties.numerics import sites
from tests.numerics import orders

BETA = 2.0**-30
TRIALS = 400
STAGE_CLASSES = {  # the emulation's stage → the site classes whose charge covers it
    "norm": ("attn.norm", "ffn.norm"),
    "norm_out": ("attn.input",),
    "qkv": ("q", "k", "v"),
    "angles": ("rope.tables",),
    "tables": ("rope.tables",),
    "scores": ("softmax.scores+probs",),
    "softmax": ("softmax.scores+probs",),
    "softmax_sum": ("softmax.sum",),
    "pv": ("attn.pv",),
    "wo": ("attn.out",),
    "gate": ("ffn.hidden",),
    "up": ("ffn.hidden",),
    "down": ("ffn.down",),
}


class _Beta:
    """Precisions with u = β in c and t = c (float64 storage): every site charged at β."""

    uc = ut = u_store = BETA
    narrow = False
    tiny_c = tiny_t = 0.0


def _case() -> tuple[np.ndarray, dict[str, np.ndarray], ModelConfig]:
    cfg = ModelConfig(dim=16, n_heads=2, n_kv_heads=1, ffn_dim=24, max_seq_len=8, rope_theta=10.0)
    x = np.random.default_rng(3).standard_normal((1, 6, 16))
    params = S.block_params(cfg, torch.float64, seed=4, scale=1.0, logit_scale=3.0)
    return x, {k: v.numpy() for k, v in params.items()}, cfg


@pytest.fixture(scope="module")
def charged() -> dict[str, np.ndarray]:
    x, P, cfg = _case()
    sites.TRACE = {}
    try:
        sites.block(x, P, cfg, _Beta())
        return {k: np.sum(v, axis=0) for k, v in sites.TRACE.items()}
    finally:
        sites.TRACE = None


@pytest.mark.parametrize("stage", list(STAGE_CLASSES))
def test_a_stage_moves_the_output_by_at_most_what_its_sites_are_charged(stage: str, charged) -> None:
    x, P, cfg = _case()
    exact = orders.block(x, P, cfg, torch.float64, "pairwise")
    rng = np.random.default_rng(len(stage))

    def perturb(name: str, v: np.ndarray) -> np.ndarray:
        return v * (1 + rng.uniform(-BETA, BETA, v.shape)) if name == stage else v

    runs = [orders.block(x, P, cfg, torch.float64, "pairwise", perturb=perturb) - exact for _ in range(TRIALS)]
    empirical = np.mean(np.stack(runs) ** 2, axis=0)[0]  # (T, D)
    charge = sum(charged[c] for c in STAGE_CLASSES[stage]) / 3
    free = charge == 0  # (token 0 attends to itself alone: its output does not depend on scores or RoPE)
    assert np.all(empirical[free] <= 1e-6 * BETA**2), f"{stage}: moves outputs that its sites are not charged for"
    ratio = empirical[~free] / charge[~free]
    # sampling: 400 trials estimate a variance within ~±30% (3 standard errors of a chi-square-like mean)
    assert float(ratio.max()) <= 1.3, f"{stage}: the output moves by up to {ratio.max():.3g}× its sites' charge"
    # (the charge of a class also covers sites the emulation does not perturb: the exp, s − max, the reductions)
    assert float(np.median(ratio)) >= 1e-5, f"{stage}: charged {1 / np.median(ratio):.3g}× what it moves"


def test_the_attention_inputs_roundings_are_charged_exactly(charged) -> None:
    """The roundings of the attn-norm's output a_s reach q_s, k_s and v_s together; ``sites._attention_input`` adds
    their paths before squaring, with exact coefficients. The emulation perturbs a once per element; the charge
    counts its three roundings (x·r, ·w, the store in t), so the ratio is 1/3 where the coefficients are exact. (A
    bound by the largest eigenvalue of diag(B)·WᵀW·diag(B), as before, charged 2–3× more on the stored cases.)"""
    x, P, cfg = _case()
    exact = orders.block(x, P, cfg, torch.float64, "pairwise")
    rng = np.random.default_rng(11)

    def perturb(name: str, v: np.ndarray) -> np.ndarray:
        return v * (1 + rng.uniform(-BETA, BETA, v.shape)) if name == "norm_out" else v

    runs = [orders.block(x, P, cfg, torch.float64, "pairwise", perturb=perturb) - exact for _ in range(TRIALS)]
    empirical = np.mean(np.stack(runs) ** 2, axis=0)[0]
    ratio = empirical / (charged["attn.input"] / 3)
    assert 0.25 <= float(np.median(ratio)) <= 0.42, f"median ratio {np.median(ratio):.3g}, 1/3 if exact"


def _sequential_partial_squares(p: np.ndarray) -> np.ndarray:
    """Σ_ν S_ν² of a sequential sum of the terms p (last axis) in their order: S_ν the partial sums P_2 … P_n."""
    return (np.cumsum(p, axis=-1)[..., 1:] ** 2).sum(axis=-1)


def _pairwise_partial_squares(p: np.ndarray) -> np.ndarray:
    """Σ_ν S_ν² of a pairwise sum (adjacent pairs, an odd one carried to the next level)."""
    total = np.zeros(p.shape[:-1])
    while p.shape[-1] > 1:
        k = p.shape[-1] // 2 * 2
        sums = p[..., 0:k:2] + p[..., 1:k:2]
        total += (sums * sums).sum(-1)
        p = np.concatenate([sums, p[..., k:]], axis=-1)
    return total


@pytest.mark.parametrize("n", [5, 40, 128, 129])
def test_a_dot_products_partial_sums_are_bounded_for_every_order_by_its_sorted_terms(n: int) -> None:
    """``sites._linear_terms`` up to EXACT_LARGEST terms: Σ_ν S_ν² ≤ Σ_k M_k² (M_k the larger of the sums of the k
    largest positive and the k largest negative terms) for every summation order — sequential in any permutation,
    pairwise, and the adversarial one: the positive terms largest first, then the negative ones — and ≤ Q of max|p|
    (``tree_squares``), below Σ_k T_k² of the k largest |terms| on terms of random signs; equal to a sequential
    order's when the terms share a sign and come largest first (attained: no smaller bound holds for every order).
    Above EXACT_LARGEST terms it is Q with max|a|·max|W| for the largest term."""
    rng = np.random.default_rng(n)
    a, W = rng.standard_normal((3, n)), rng.standard_normal((4, n))
    partial, squares = sites._linear_terms(a, W)
    terms = a[:, None, :] * W[None]  # (rows, outputs, n)
    np.testing.assert_allclose(squares, (terms * terms).sum(-1), rtol=1e-12)
    absolute = np.abs(terms)
    if n > sites.EXACT_LARGEST:
        largest = np.abs(a).max(-1, keepdims=True) * np.abs(W).max(-1)
        np.testing.assert_allclose(partial, sites.tree_squares(absolute.sum(-1), largest, n), rtol=1e-12)
        return
    Q = sites.tree_squares(absolute.sum(-1), absolute.max(-1), n)
    unsigned = sites.sorted_tree_squares(absolute)
    assert np.all(partial <= unsigned * (1 + 1e-12)) and np.all(unsigned <= Q * (1 + 1e-12))
    assert np.median(partial / unsigned) < 0.8  # the signs: about half of T_k once k passes a sign's count
    seen = [_sequential_partial_squares(terms[..., rng.permutation(n)]) for _ in range(200)]
    seen.append(_pairwise_partial_squares(terms))
    key = np.where(terms > 0, -terms, np.inf)  # the positive terms largest first, then the negative ones
    seen.append(_sequential_partial_squares(np.take_along_axis(terms, np.argsort(key, axis=-1), axis=-1)))
    assert all(np.all(s <= partial * (1 + 1e-12)) for s in seen)
    one_sign, _ = sites._linear_terms(np.abs(a), np.abs(W))
    largest_first = _sequential_partial_squares(-np.sort(-absolute, axis=-1))
    np.testing.assert_allclose(largest_first, one_sign, rtol=1e-12)  # the bound itself


def test_a_rounding_errs_at_most_half_an_ulp_of_the_binade_of_a_bound_on_its_value() -> None:
    """``sites.binade``: |fl(z) − z| ≤ u·binade(b) for every |z| ≤ b, with rounding to nearest in fp32 — at the
    edges too (z just below a power of two rounds up to it) — and u·binade(b) is up to 2× below u·b."""
    rng = np.random.default_rng(7)
    z = np.concatenate([rng.standard_normal(100_000) * 2.0 ** rng.integers(-30, 30, 100_000),
                        np.nextafter(2.0 ** np.arange(-20, 20), 0.0), 2.0 ** np.arange(-20, 20)])  # fmt: skip
    err = np.abs(z.astype(np.float32).astype(np.float64) - z)
    u = 2.0**-24
    assert np.all(err <= u * sites.binade(np.abs(z)))
    assert np.max(err / (u * sites.binade(np.abs(z)))) > 0.99  # attained: no smaller per-binade bound holds
    np.testing.assert_array_equal(sites.binade(np.array([0.0, 1.0, 1.999, 2.0, 3.0, 0.75, np.inf])),
                                  [0.0, 1.0, 1.0, 2.0, 2.0, 0.5, np.inf])  # fmt: skip


def _rounded_nodes(p: np.ndarray, order: str, dtype: type) -> np.ndarray:
    """Σ_ν (rounding error of addition ν)² of a sum of the terms p (rounded to ``dtype`` first) in ``order``
    (sequential in the given order, or pairwise), in ``dtype``: the actual errors the binade bound must cover."""
    q = p.astype(dtype)
    total = np.zeros(p.shape[:-1])
    if order == "sequential":
        acc = q[..., 0]
        for k in range(1, q.shape[-1]):
            exact = acc.astype(np.float64) + q[..., k].astype(np.float64)
            acc = (acc + q[..., k]).astype(dtype)
            total += (acc.astype(np.float64) - exact) ** 2
        return total
    while q.shape[-1] > 1:
        k = q.shape[-1] // 2 * 2
        exact = q[..., 0:k:2].astype(np.float64) + q[..., 1:k:2].astype(np.float64)
        sums = (q[..., 0:k:2] + q[..., 1:k:2]).astype(dtype)
        total += ((sums.astype(np.float64) - exact) ** 2).sum(-1)
        q = np.concatenate([sums, q[..., k:]], axis=-1)
    return total


@pytest.mark.parametrize("signs", ["random", "positive"])
def test_the_binade_bound_on_partial_sums_covers_every_orders_actual_roundings(signs: str) -> None:
    """``sites.sorted_tree_squares`` with the terms' errors (the binade bound of the probabilistic tier): u²·Σ_k
    binade(M_k + …)² ≥ the sum of the squared rounding errors of every addition, in fp32, of the terms rounded to
    fp32 — sequential in 300 permutations (and the adversarial one: one sign largest first), pairwise — and below
    u²·Σ_k M_k² (the bound by u·|S_ν|) by 1.5–2.3× on these terms. Equal positive terms put the partial sums
    k·a at every mantissa of a binade: Σ binade² is 7/3 below Σ (k·a)² there."""
    rng = np.random.default_rng(11)
    n, u = 96, 2.0**-24
    p = rng.standard_normal((20, n)) * rng.standard_normal((20, 1))
    p = np.abs(p) if signs == "positive" else p
    err = u * np.abs(p)  # the terms rounded to fp32 (the products' rounding)
    bound = u * u * sites.sorted_tree_squares(p, err, u)
    plain = u * u * sites.sorted_tree_squares(p)
    for _ in range(300):
        perm = p[..., rng.permutation(n)]
        assert np.all(_rounded_nodes(perm, "sequential", np.float32) <= bound)
    one_sign_first = np.take_along_axis(p, np.argsort(np.where(p > 0, -p, np.inf), axis=-1), -1)
    assert np.all(_rounded_nodes(one_sign_first, "sequential", np.float32) <= bound)
    assert np.all(_rounded_nodes(p, "pairwise", np.float32) <= bound)
    assert 1.5 < float(np.median(plain / bound)) < 2.6
    equal = np.full((1, 4096), 1.0 + 2.0**-10)
    ratio = sites.sorted_tree_squares(equal) / sites.sorted_tree_squares(equal, 0.0, u)
    assert 2.2 < float(ratio[0]) < 7 / 3 + 1e-3


def test_a_norm_that_scales_each_square_by_1_over_d_is_inside_the_binade_bound_only_through_its_scale() -> None:
    """Σ fl(x_i²·fl(1/D)) in fp32 (sequential): its roundings, in units of the unscaled squares, stay inside
    ``sorted_tree_squares(…, scale=1/D)``; for D = 3 (1/D not a power of two) the binades of the unscaled sums alone
    are exceeded — the scaled partial sum can sit in a binade above the scaled one — so the scale is needed."""
    u, D = 2.0**-24, 3
    x = np.random.default_rng(3).standard_normal((400, D)).astype(np.float32)
    q = (x * x * np.float32(1.0 / D)).astype(np.float32)
    acc, seen = q[:, 0].copy(), np.zeros(len(x))
    for k in range(1, D):
        exact = acc.astype(np.float64) + q[:, k].astype(np.float64)
        acc = (acc + q[:, k]).astype(np.float32)
        seen += ((acc.astype(np.float64) - exact) * D) ** 2
    sq = x.astype(np.float64) ** 2
    assert np.all(seen <= u * u * sites.sorted_tree_squares(sq, u * sq, u, 1.0 / D))
    assert np.any(seen > u * u * sites.sorted_tree_squares(sq, u * sq, u))
