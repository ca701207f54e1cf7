"""Exact emulation of the reduction orders real kernels use, and of RMSNorm / SwiGLU / attention built on them.

Every operation runs in numpy in the compute dtype c (float32 or float64), which rounds each result to nearest-even
— the arithmetic of the kernel being emulated, operation by operation. Rounding to the storage dtype t (fp16, bf16)
goes through torch's round-to-nearest-even conversion. Terms are (rows, n) arrays; a reduction returns (rows,).

Orders (the kernels they stand for):

    sequential      one accumulator, left to right (a naive loop; BLAS inner kernels for small n)
    reversed        right to left
    lanes<L>        L accumulators, lane j sums terms j, j+L, …, lanes combined by a tree at the end (inductor's
                    vectorised CPU reductions: 8 or 16 lanes; CUDA/Triton per-thread loops: 32…1024 lanes)
    pairwise        a balanced binary tree (numpy's pairwise sum, torch's cascade sum)
    blocked<m>      sequential runs of m terms, the run sums added sequentially (OpenBLAS/MKL kc blocking)
    splitk<s>       s contiguous chunks each sequential, the s partial sums added sequentially (split-K GEMMs)
    kahan           compensated sequential summation
    fma             sequential fused multiply-add acc + a·b with one rounding (fp32 only: emulated in fp64, where a·b
                    is exact; the extra rounding of the fp64 sum moves the result by ≤ 2^-29 relatively)

The bounds must admit every one of them on every input: tests/numerics/test_reduction_orders.py.
"""

from __future__ import annotations

import math

import numpy as np
import torch

ORDERS = (
    "sequential",
    "reversed",
    "lanes2",
    "lanes8",
    "lanes16",
    "lanes128",
    "pairwise",
    "blocked384",
    "splitk4",
    "splitk16",
    "kahan",
)
DOT_ORDERS = (*ORDERS, "fma")


def _pad(t: np.ndarray, multiple: int) -> np.ndarray:
    n = t.shape[-1]
    extra = (-n) % multiple
    return t if extra == 0 else np.concatenate([t, np.zeros((*t.shape[:-1], extra), t.dtype)], axis=-1)


def _sequential(t: np.ndarray, axis: int = -1) -> np.ndarray:
    """Left to right with one accumulator: ufunc.accumulate is defined as r_k = r_(k−1) + t_k, each step rounded."""
    if t.shape[axis] == 0:
        return np.zeros(np.delete(t.shape, axis), t.dtype)
    return np.take(np.add.accumulate(t, axis=axis, dtype=t.dtype), -1, axis=axis)


def _tree(t: np.ndarray) -> np.ndarray:
    """Balanced binary tree over the last axis (zeros pad to a power of two: adding 0 is exact)."""
    n = t.shape[-1]
    t = _pad(t, 1 << max(0, math.ceil(math.log2(max(n, 1)))))
    while t.shape[-1] > 1:
        t = t[..., 0::2] + t[..., 1::2]
    return t[..., 0]


def _lanes(t: np.ndarray, L: int) -> np.ndarray:
    t = _pad(t, L)
    lanes = t.reshape(*t.shape[:-1], -1, L)  # (..., n/L, L): lane j holds terms j, j+L, …
    return _tree(_sequential(lanes, axis=-2))


def _chunks(t: np.ndarray, size: int) -> np.ndarray:
    t = _pad(t, size)
    parts = t.reshape(*t.shape[:-1], -1, size)  # (..., chunks, size)
    return _sequential(_sequential(parts))  # within each chunk, then the chunk sums


def _kahan(t: np.ndarray) -> np.ndarray:
    s = np.zeros(t.shape[:-1], t.dtype)
    comp = np.zeros_like(s)
    for k in range(t.shape[-1]):
        y = t[..., k] - comp
        new = s + y
        comp = (new - s) - y
        s = new
    return s


def reduce(terms: np.ndarray, order: str) -> np.ndarray:
    """Σ over the last axis of ``terms`` (in its own dtype, every addition rounded) in ``order``."""
    if order == "sequential":
        return _sequential(terms)
    if order == "reversed":
        return _sequential(terms[..., ::-1])
    if order.startswith("lanes"):
        return _lanes(terms, int(order[5:]))
    if order == "pairwise":
        return _tree(terms)
    if order.startswith("blocked"):
        return _chunks(terms, int(order[7:]))
    if order.startswith("splitk"):
        return _chunks(terms, max(1, math.ceil(terms.shape[-1] / int(order[6:]))))
    if order == "kahan":
        return _kahan(terms)
    raise ValueError(f"unknown order {order!r}")


def dot(a: np.ndarray, b: np.ndarray, order: str) -> np.ndarray:
    """Σ_k a_k·b_k over the last axis in a's dtype: products rounded, then ``reduce``; "fma" fuses them (fp32)."""
    if order != "fma":
        return reduce(a * b, order)
    if a.dtype != np.float32:
        raise ValueError("fma is emulated for float32 only")
    acc = np.zeros(np.broadcast_shapes(a.shape, b.shape)[:-1], np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k in range(a.shape[-1]):
        acc = (acc + a64[..., k] * b64[..., k]).astype(np.float32)
    return acc


def matvec(x: np.ndarray, W: np.ndarray, order: str) -> np.ndarray:
    """x Wᵀ (nn.Linear): x (N, n), W (m, n) → (N, m), every dot product in ``order``."""
    return dot(x[:, None, :], W[None, :, :], order)


def compute_dtype(t: torch.dtype) -> type:
    return np.float64 if t == torch.float64 else np.float32


def to_t(a: np.ndarray, t: torch.dtype) -> np.ndarray:
    """Round to the storage dtype t (RNE) and back to the compute dtype."""
    c = compute_dtype(t)
    if t in (torch.float32, torch.float64):
        return a.astype(c)
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(t).float().numpy().astype(c)


def _exp(a: np.ndarray) -> np.ndarray:
    """exp in c correctly rounded (evaluated in fp64 and rounded once): the sums are what is under test."""
    with np.errstate(over="ignore"):
        return np.exp(a.astype(np.float64)).astype(a.dtype)


def _silu(a: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = a.astype(np.float64)
        return (z / (1 + np.exp(-z))).astype(a.dtype)


def rmsnorm(x: np.ndarray, w: np.ndarray, eps: float, t: torch.dtype, order: str, hf: bool = False) -> np.ndarray:
    """RMSNorm of rows x (values of t) in c with Σx² in ``order``: y = x·rsqrt(Σx²/D + eps)·w rounded to t once
    (the reference), or with HF-Llama's two roundings (x·r to t, then ·w to t)."""
    c = compute_dtype(t)
    xc, wc = x.astype(c), w.astype(c)
    S = reduce(xc * xc, order)[..., None]
    r = c(1) / np.sqrt(S / c(x.shape[-1]) + c(eps))
    if hf:
        return to_t(to_t(xc * r, t) * wc, t)
    return to_t(xc * r * wc, t)


def swiglu(x: np.ndarray, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray, t: torch.dtype, order: str):
    """SwiGLU of rows x with every dot product in ``order``, in both conventions at once: (fused, hf) — one
    rounding at the end (a fused kernel), and HF's module-dtype chain (g, u, silu, h rounded to t)."""
    c = compute_dtype(t)
    xc, wgc, wuc, wdc = (a.astype(c) for a in (x, wg, wu, wd))
    g, u = matvec(xc, wgc, order), matvec(xc, wuc, order)  # the same dot products for both conventions
    fused = _silu(g) * u
    gt, ut = to_t(g, t), to_t(u, t)
    hf = to_t(to_t(_silu(gt), t) * ut, t)
    y = to_t(matvec(np.concatenate([fused, hf]), wdc, order), t)
    return y[: x.shape[0]], y[x.shape[0] :]


def attention(x: np.ndarray, W: tuple[np.ndarray, ...], H: int, G: int, theta: float, t: torch.dtype, order: str):
    """The reference attention (projections rounded to t, RoPE / scores / softmax / p·v in c, heads rounded to t
    before W_o) with every dot product and the softmax sum in ``order``. x (B, T, D)."""
    c = compute_dtype(t)
    B, T, D = x.shape
    K = D // H
    wq, wk, wv, wo = (w.astype(c) for w in W)
    flat = x.reshape(B * T, D).astype(c)

    def proj(w: np.ndarray, n: int) -> np.ndarray:
        return to_t(matvec(flat, w, order), t).reshape(B, T, n, K).transpose(0, 2, 1, 3)  # (B, n, T, K)

    q, k, v = proj(wq, H), proj(wk, G), proj(wv, G)
    inv = (c(1) / c(theta) ** (np.arange(0, K, 2, dtype=c) / c(K))).astype(c)
    ang = np.arange(T, dtype=c)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=-1)
    cos, sin = (f(ang.astype(np.float64)).astype(c) for f in (np.cos, np.sin))

    def rope(a: np.ndarray) -> np.ndarray:
        half = K // 2
        rot = np.concatenate([-a[..., half:], a[..., :half]], axis=-1)
        return a * cos + rot * sin

    q, k = rope(q), rope(k)
    k, v = np.repeat(k, H // G, axis=1), np.repeat(v, H // G, axis=1)
    scores = dot(q[:, :, :, None, :], k[:, :, None, :, :], order) / c(math.sqrt(K))  # (B, H, T, T)
    causal = np.tril(np.ones((T, T), dtype=bool))
    scores = np.where(causal, scores, c(-np.inf))
    e = np.where(causal, _exp(scores - scores.max(axis=-1, keepdims=True)), c(0))
    p = e / reduce(e, "sequential" if order == "fma" else order)[..., None]  # (a sum: no products to fuse)
    o = dot(p[:, :, :, None, :], np.swapaxes(v, -1, -2)[:, :, None, :, :], order)  # (B, H, T, K)
    heads = to_t(o.transpose(0, 2, 1, 3).reshape(B * T, H * K), t)
    return to_t(matvec(heads, wo, order), t).reshape(B, T, D)


def _rope(a: np.ndarray, cos: np.ndarray, sin: np.ndarray, t: torch.dtype, hf: bool) -> np.ndarray:
    """a⊙cos + rotate_half(a)⊙sin in c; HF rounds each product and the sum to t."""
    half = a.shape[-1] // 2
    rot = np.concatenate([-a[..., half:], a[..., :half]], axis=-1)
    r = (lambda v: to_t(v, t)) if hf else (lambda v: v)
    return r(r(a * cos) + r(rot * sin))


STAGES = (
    "norm",
    "norm_out",
    "qkv",
    "angles",
    "tables",
    "scores",
    "softmax",
    "softmax_sum",
    "pv",
    "wo",
    "gate",
    "up",
    "down",
)


def block(
    x: np.ndarray, P: dict[str, np.ndarray], cfg, t: torch.dtype, order: str, hf: bool = False, perturb=None
) -> np.ndarray:
    """The pre-norm Block of rows x (1, T, D) with every dot product and sum in ``order``: the reference (norms in c
    rounded once, projections rounded to t, RoPE / scores / softmax / p·v in c, heads rounded to t, SwiGLU and the
    residuals in t) or HF's eager decoder layer in t (``hf``: x·r rounded before ·w, cos/sin, RoPE products, q·kᵀ,
    the scaling, the probabilities, p·v and every SwiGLU intermediate rounded to t).

    ``perturb(stage, value) -> value``: an emulated implementation that errs at one stage (STAGES: the norms' r, the
    attn-norm's output, the q/k/v projections, the RoPE angles, the cos/sin tables, the scores, the probabilities,
    the softmax sum, p·v, W_o's output, the SiLU gate, the up projection, W_down's output) — the sensitivity
    measurement."""
    at = perturb or (lambda stage, value: value)
    c = compute_dtype(t)
    _, T, D = x.shape
    H, G = cfg.n_heads, cfg.n_kv_heads
    K = D // H
    eps = cfg.norm_eps
    Pc = {k: v.astype(c) for k, v in P.items()}
    rows = x[0]
    sums = "sequential" if order == "fma" else order  # (sums of squares: no products to fuse)

    def norm(z: np.ndarray, w: np.ndarray) -> np.ndarray:
        if perturb is None:
            return rmsnorm(z, w, eps, t, sums, hf=hf).astype(c)
        zc = z.astype(c)
        r = at("norm", c(1) / np.sqrt(reduce(zc * zc, sums)[..., None] / c(z.shape[-1]) + c(eps)))
        return to_t(zc * r * w.astype(c), t)

    a = at("norm_out", norm(rows, P["attn_norm.weight"]))

    def proj(w: np.ndarray, n: int) -> np.ndarray:
        return to_t(at("qkv", matvec(a, w, order)), t).reshape(T, n, K).transpose(1, 0, 2)  # (n, T, K)

    q, k, v = proj(Pc["attn.wq.weight"], H), proj(Pc["attn.wk.weight"], G), proj(Pc["attn.wv.weight"], G)
    inv = (c(1) / c(cfg.rope_theta) ** (np.arange(0, K, 2, dtype=c) / c(K))).astype(c)
    ang = at("angles", np.arange(T, dtype=c)[:, None] * inv[None, :])
    ang = np.concatenate([ang, ang], axis=-1)
    cos, sin = (at("tables", f(ang.astype(np.float64)).astype(c)) for f in (np.cos, np.sin))
    if hf:
        cos, sin = to_t(cos, t), to_t(sin, t)
    q, k = _rope(q, cos, sin, t, hf), _rope(k, cos, sin, t, hf)
    k, v = np.repeat(k, H // G, axis=0), np.repeat(v, H // G, axis=0)
    scores = dot(q[:, :, None, :], k[:, None, :, :], order)  # (H, T, T)
    scores = at("scores", to_t(to_t(scores, t) * c(1 / math.sqrt(K)), t) if hf else scores / c(math.sqrt(K)))
    causal = np.tril(np.ones((T, T), dtype=bool))
    scores = np.where(causal, scores, c(-np.inf))
    e = np.where(causal, _exp(scores - scores.max(axis=-1, keepdims=True)), c(0))
    p = at("softmax", e / at("softmax_sum", reduce(e, "sequential" if order == "fma" else order)[..., None]))
    if hf:
        p = to_t(p, t)
    o = at("pv", dot(p[:, :, None, :], np.swapaxes(v, -1, -2)[:, None, :, :], order))  # (H, T, K)
    heads = to_t(o.transpose(1, 0, 2).reshape(T, H * K), t)
    h = to_t(rows.astype(c) + to_t(at("wo", matvec(heads, Pc["attn.wo.weight"], order)), t), t)
    b = norm(h, P["ffn_norm.weight"])
    if perturb is None:
        fused, hf_y = swiglu(b, P["ffn.w_gate.weight"], P["ffn.w_up.weight"], P["ffn.w_down.weight"], t, order)
        return to_t(h + (hf_y if hf else fused).astype(c), t)[None]
    g = to_t(matvec(b, Pc["ffn.w_gate.weight"], order), t)
    u = to_t(at("up", matvec(b, Pc["ffn.w_up.weight"], order)), t)
    hid = to_t(to_t(at("gate", _silu(g)), t) * u, t)
    f = to_t(at("down", matvec(hid, Pc["ffn.w_down.weight"], order)), t)
    return to_t(h + f, t)[None]


def rmsnorm_vjp(x: np.ndarray, w: np.ndarray, eps: float, g: np.ndarray, t: torch.dtype, order: str, hf: bool = False):
    """(dx, dγ) of RMSNorm rows x for the cotangent g, every sum in ``order``: dx = r·(g⊙w) − r³/D·x·Σ_j g_j w_j x_j,
    dγ = Σ_rows g⊙(x·r), in c (HF: g⊙w, x·r, g⊙(x·r) and dx rounded to t), rounded to t."""
    c = compute_dtype(t)
    sums = "sequential" if order == "fma" else order
    xc, wc, gc = x.astype(c), w.astype(c), g.astype(c)
    r = c(1) / np.sqrt(reduce(xc * xc, sums)[..., None] / c(x.shape[-1]) + c(eps))
    r_t = (lambda v: to_t(v, t)) if hf else (lambda v: v)
    gw = r_t(gc * wc)
    A = dot(gw, xc, order)[..., None]
    dx = r_t(r * gw - r * r * r * A * xc / c(x.shape[-1]))
    terms = r_t(gc * r_t(xc * r))
    return to_t(dx, t), to_t(reduce(np.ascontiguousarray(terms.T), sums), t)


# Autograd's rounding patterns in RMSNorm's backward (the sharp tier must hold for each, issue 37): where x meets
# two dtypes, autograd forms one gradient contribution per use and rounds each to x's dtype before adding them.
VJP_PATTERNS = (
    "t5",  # HF T5 / flax: Σx² of x.to(c), x (t) · r (c) promoted to c, then .to(t)·w in t — emulated op by op
    "terms",  # a hand-written backward that rounds every elementwise term to t: g⊙w, r·(g⊙w), the x·(r³A/D) term
    "summed_in_t",  # the two contributions rounded to t and added in t in the other order (−term₂ + term₁)
)


def rmsnorm_vjp_pattern(
    x: np.ndarray, w: np.ndarray, eps: float, g: np.ndarray, t: torch.dtype, order: str, pattern: str
) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dγ) of RMSNorm rows x for the cotangent g as ``pattern`` (VJP_PATTERNS) computes them, every sum in
    ``order``, every operation in c (numpy, rounded to nearest), every rounding to t through torch.

    "t5" is torch autograd's graph of ``w * (x * rsqrt(x.to(c).pow(2).mean(-1) + eps)).to(t)`` step by step: dz =
    fl_t(g·w); the product's contribution fl_t(dz·r); rsqrt's backward −½·dr·r³ (dr = Σ dz·x), the mean's 1/D, the
    square's 2·x, that contribution fl_t(…); dx = fl_t(both added); dγ = Σ_rows fl_t(g·fl_t(x·r))."""
    c = compute_dtype(t)
    sums = "sequential" if order == "fma" else order
    D = x.shape[-1]
    xc, wc, gc = x.astype(c), w.astype(c), g.astype(c)
    r = c(1) / np.sqrt(reduce(xc * xc, sums)[..., None] / c(D) + c(eps))
    gw = to_t(gc * wc, t)
    if pattern == "t5":
        one = to_t(gw * r, t)
        dr = dot(gw, xc, order)[..., None]
        dvar = (c(-0.5) * dr) * (r * r * r)
        two = to_t((dvar / c(D)) * (c(2) * xc), t)
        dx = to_t(one + two, t)
    elif pattern == "terms":
        A = dot(gw, xc, order)[..., None]
        dx = to_t(to_t(r * gw, t) - to_t(xc * (r * r * r * A / c(D)), t), t)
    elif pattern == "summed_in_t":
        A = dot(gw, xc, order)[..., None]
        dx = to_t(-to_t(r * r * r * A * xc / c(D), t) + to_t(r * gw, t), t)
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    terms = to_t(gc * to_t(xc * r, t), t)
    return to_t(dx, t), to_t(reduce(np.ascontiguousarray(terms.T), sums), t)
