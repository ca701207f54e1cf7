"""Derived error bounds: for each component and each law, the allowed |actual − expected| per element.

Every bound is a *first-order forward error analysis* evaluated on the actual data, from the unit roundoffs
u_t of the storage dtype t (inputs, weights, output) and u_c of the compute dtype c (c = fp32 for fp16/bf16,
else c = t) and the shapes (D, F, K, T). One analysis admits every *accepted way of computing* at once:

(a) compute in c, round once to t (the reference, torch ``F.rms_norm``, Gemma, fused and compiled kernels);
(b) HF-Llama RMSNorm: (x_c·r).to(t) then × w in t — two roundings to t;
(c) HF/torch SwiGLU and attention in t: every linear output, silu, product, RoPE product and sum, scores,
    probabilities, attention output and residual sum rounded to t (GEMMs accumulate in ≥ c);
(d) float64 maths (t = c = fp64);
(e) **any reduction order** of every sum and dot product in c: sequential, L-lane sequential (any L: inductor's
    vectorised CPU loops, CUDA/Triton per-thread loops), pairwise / tree, blocked BLAS, split-K, Kahan.

Reductions (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1, §4.2). A sum of n terms evaluated
by any binary tree of depth h errs by at most γ_h·Σ|p_k|, γ_k = k·u/(1 − k·u); a dot product adds one
rounding per product. The deepest tree is the sequential one, h = n − 1, so every order is covered by

    any order:  |ŝ − s| ≤ γ_(n−1+m)(u_c)·Σ|p_k|      (m = 1 rounding per product, 0 for given terms)
    pairwise:   |ŝ − s| ≤ γ_(⌈log2 n⌉+m)(u_c)·Σ|p_k|  (the tight *reference*, reported, never enforced).

The any-order constant is deterministic: it holds when the rounding errors correlate (a constant row, a
same-sign row — Σx² and the softmax denominator always are), where the independence assumption of a
probabilistic model (Higham & Mary 2019) fails: ``torch.compile``'s 8-lane sequential Σx² of a constant row
errs 5× beyond the pairwise constant at D = 4096. So in this (deterministic) tier every reduction's own error is
bounded deterministically.

Two tiers. ``Bound.abs`` is the deterministic tier described here; on inputs a law drew (``drawn``,
``random_weights``) whose rounding errors the model describes (``sites.model_rows``), ``Bound.prob`` adds the
probabilistic tier: λ·√(Σ_k c_k²B_k²) with the exact first-order coefficients of every rounding site
(``properties.numerics.sites``, Higham & Mary's model of mean-zero rounding errors), a stated probability of
exceeding it (:func:`probabilistic`), and ``Bound.allowed`` = min of the two judges. The rest of this docstring is
the deterministic tier.

Probabilistic only where the randomness is the verifier's own. The rounding errors e_k of the inputs of a
linear map y_j = Σ_k W_jk·v_k propagate as Σ_k W_jk·e_k. When the law *drew* W with independent entries of
symmetric distribution, independently of everything upstream of the map (``random_weights=True``: the laws'
``strategies.linear_weight`` draws), the signs of W_jk are independent fair coins given |W| and e — whatever
the e_k are, correlated or adversarial — and Hoeffding gives |Σ_k W_jk e_k| ≤ λ·√(Σ_k W_jk²·ē_k²) for
bounds |e_k| ≤ ē_k with probability ≥ 1 − 2·exp(−λ²/2) over the draw (λ = 6: 3·10⁻⁸ per element and map).
The propagated error is then min(Σ_k |W_jk|·ē_k, λ·√(Σ_k W_jk²·ē_k²)). Weights that were not drawn so (the
exhaustive SiLU gate's identities, user weights, backward passes where the upstream error depends on W)
propagate deterministically. No other part of any bound relies on independence.

Underflow: every operation in c may also err by the smallest normal of c (flush-to-zero included), every
rounding to t by half its subnormal spacing. Overflow: where an accepted convention overflows t (or c) in an
intermediate, the bound of that row is +inf (``Bound.overflow``: the overflow is the convention's, not a bug).

Each intermediate v carries two error bounds: ``ea`` (every accepted order: the pass/fail bound) and ``ep``
(the same analysis with pairwise reductions: the tight reference). After the last operation the error δ is
scaled by 1/(1 − n_t·u_t) (second-order terms of n_t roundings to t along a path) and the final rounding to t
adds half a ULP at the rounded value: ``abs = δ + ½·ulp_t(|y| + δ)``; ``ulps = abs / ulp_t(y)``.

Headroom and accuracy class (reported, never enforced): headroom = max |actual − expected| / abs (≤ 1
passes); pairwise headroom = max |actual − expected| / pairwise. Order class "pairwise" when the pairwise
headroom is ≤ 1 (as accurate as the worst case of pairwise reductions), "any order" when only the any-order
bound holds. :func:`order_class`.

Where each part lives (this package re-exports every public name, so ``bounds.rmsnorm`` is the one way to call):

    bound.py        the Bound type, its accuracy and order classes, ULP counts as text, ``between``
    arithmetic.py   γ_k and reduction depths, the declared arithmetic (``Arithmetic``, ``declared``, ``shadowed``),
                    the compute dtype's policy, the precisions of one evaluation
    propagation.py  a value with its two error bounds and the operations on it; ``_finish`` makes the Bound
    tier.py         the probabilistic tier's λ and its stated probability (the per-site model: ``sites``)
    norm.py         RMSNorm: forward, invariants, VJP        add_norm.py     AddRMSNorm: (y, h), VJP
    feedforward.py  SwiGLU and SiLU: forward, invariants, VJP
    decoder.py      RoPE, attention, the Block               empirical.py    the Block's measured VJP oracle

A new component's bounds go in a module of their own here, composed from ``propagation`` (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from properties.numerics.bounds.add_norm import add_rmsnorm, add_rmsnorm_from_h, add_rmsnorm_vjp
from properties.numerics.bounds.arithmetic import (
    Arithmetic,
    compute_dtype,
    declared,
    declared_arithmetic,
    gamma,
    reduction_roundings,
    shadowed,
    sum_of_squares_limit,
)
from properties.numerics.bounds.bound import EMPIRICAL, Bound, accuracy_class, between, order_class, ulps_text
from properties.numerics.bounds.decoder import attention, block
from properties.numerics.bounds.empirical import UNSEEN_ROUNDINGS, block_depth_ratio, block_vjp
from properties.numerics.bounds.feedforward import (
    silu,
    silu_gate,
    swiglu,
    swiglu_drift,
    swiglu_linearity,
    swiglu_vjp,
)
from properties.numerics.bounds.norm import (
    rmsnorm,
    rmsnorm_drift,
    rmsnorm_gamma_scaling,
    rmsnorm_norm,
    rmsnorm_row_sum,
    rmsnorm_scale_invariance,
    rmsnorm_vjp,
)
from properties.numerics.bounds.propagation import LAMBDA
from properties.numerics.bounds.tier import (
    JOINT_SHARE,
    chaos_factor,
    probabilistic,
    tier_lambda,
)

__all__ = [
    "EMPIRICAL",
    "JOINT_SHARE",
    "LAMBDA",
    "UNSEEN_ROUNDINGS",
    "Arithmetic",
    "Bound",
    "accuracy_class",
    "add_rmsnorm",
    "add_rmsnorm_from_h",
    "add_rmsnorm_vjp",
    "attention",
    "between",
    "block",
    "block_depth_ratio",
    "block_vjp",
    "chaos_factor",
    "compute_dtype",
    "declared",
    "declared_arithmetic",
    "gamma",
    "order_class",
    "probabilistic",
    "reduction_roundings",
    "rmsnorm",
    "rmsnorm_drift",
    "rmsnorm_gamma_scaling",
    "rmsnorm_norm",
    "rmsnorm_row_sum",
    "rmsnorm_scale_invariance",
    "rmsnorm_vjp",
    "shadowed",
    "silu",
    "silu_gate",
    "sum_of_squares_limit",
    "swiglu",
    "swiglu_drift",
    "swiglu_linearity",
    "swiglu_vjp",
    "tier_lambda",
    "ulps_text",
]
