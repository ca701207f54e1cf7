"""``nanolm-verify plot NAME|all --out DIR``: the documentation's figures, as PNG files.

Each figure is a function ``() -> Figure`` registered in ``PLOTS`` with its file name; all of them are deterministic
(fixed generators, no global seeding) and use matplotlib's object API with the Agg canvas, so nothing
touches pyplot's global state and no display is needed.

- ``error_vs_d``      RMSNorm bf16 output error (ULPs of bf16 against golden) vs D: fp32 accumulation
                      (the reference) against true bf16 accumulations, sequential and pairwise.
- ``grad_vs_depth``   gradient norm at the input of each layer of a 32-layer stack, pre-norm vs post-norm.
- ``geometry``        RMSNorm outputs on the sphere of radius √D; LayerNorm's on that sphere ∩ the plane ⊥ 𝟏.
- ``eps_placement``   relative difference of x/(rms + eps) from x/sqrt(ms + eps) vs the input's RMS.
- ``silu_cancellation`` bf16 error of silu(z) = z·σ(z) vs z·(1 − σ(−z)) over z.
- ``add_norm_orders`` AddRMSNorm in 16 bits vs D: the norm of the rounded h against the norm of the unrounded sum
                      (how often they differ, their errors against golden, the bound), and Σh² accumulated in bf16.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from properties.commands.helptext import Formatter
from properties.commands.render.wrapping import wrap

if TYPE_CHECKING:  # each figure imports what it draws with: declaring the parser (--help) imports no torch
    import numpy as np
    import torch

__all__ = ["PLOTS", "register", "render"]

_BLUE, _ORANGE, _GREEN, _RED, _GREY = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#7f7f7f"


# ---------------------------------------------------------------------------------------------- helpers


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, out_dir: Path, name: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    fig.savefig(path, metadata={"Software": None})  # no version string: the bytes depend on the data only
    return path


def _golden_rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> Any:
    """golden.rmsnorm of the exact float inputs (a Golden: hi + lo, ≥ 100 bits)."""
    import golden

    return golden.rmsnorm(x, weight, eps)


def _ulp_error(actual: torch.Tensor, exact: Any) -> np.ndarray:
    """|actual − golden| in ULPs of actual.dtype at the golden value (numerics.ulp.ulp_error)."""
    import numpy as np

    from properties.numerics import ulp

    return np.asarray(ulp.ulp_error(actual, exact), dtype=np.float64)


def _pairwise_sum_in_dtype(v: torch.Tensor) -> torch.Tensor:
    """Σ over the last axis by a binary tree, every partial sum rounded to v.dtype (a GPU-style reduction)."""
    import torch

    while v.shape[-1] > 1:
        if v.shape[-1] % 2:
            v = torch.cat((v, torch.zeros_like(v[..., :1])), dim=-1)
        v = v[..., 0::2] + v[..., 1::2]  # one rounding per addition
    return v


# ---------------------------------------------------------------------------------------------- figures


def plot_error_vs_d() -> Any:
    """RMSNorm in bf16: max and median ULP error vs D, fp32 accumulation vs true bf16 accumulations.

    Only the sum of squares differs between the three: the rest is computed in fp32 and rounded once.
    """
    import numpy as np
    import torch

    import nanolm_core
    from properties.gallery.bf16_accumulation import RMSNorm as Bf16AccumulatingRMSNorm
    from properties.numerics import bounds

    gen = torch.Generator().manual_seed(0)
    dims = [16, 32, 64, 128, 256, 512, 1000, 2048, 4096, 8192]
    rows, eps = 32, 1e-6
    series: dict[str, list[tuple[float, float]]] = {"fp32": [], "bf16 sequential": [], "bf16 pairwise": []}
    bound: list[float] = []  # the suite's derived bound for a bf16 RMSNorm (max over the elements)
    for D in dims:
        x = (torch.randn(rows, D, generator=gen) + 0.5).to(torch.bfloat16)  # non-zero mean, as activations
        w = (1 + 0.1 * torch.randn(D, generator=gen)).to(torch.bfloat16)
        exact = _golden_rmsnorm(x, w, eps)
        bound.append(float(np.max(bounds.rmsnorm(x, w, eps, torch.bfloat16).ulps)))
        ref = nanolm_core.RMSNorm(D, eps).to(torch.bfloat16)
        seq = Bf16AccumulatingRMSNorm(D, eps).to(torch.bfloat16)
        with torch.no_grad():
            ref.weight.copy_(w)
            seq.weight.copy_(w)
            ss_pw = _pairwise_sum_in_dtype(x * x).float()  # (rows, 1): the sum in bf16, the rest as the reference
            pairwise = (x.float() * torch.rsqrt(ss_pw / D + eps) * w.float()).to(torch.bfloat16)
            for key, y in (("fp32", ref(x)), ("bf16 sequential", seq(x)), ("bf16 pairwise", pairwise)):
                err = _ulp_error(y, exact)
                series[key].append((float(err.max()), float(np.median(err))))

    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    styles = {
        "fp32": (_BLUE, "Σx² accumulated in fp32 (the reference)"),
        "bf16 sequential": (_RED, "Σx² accumulated left to right in bf16 (gallery: bf16_accumulation)"),
        "bf16 pairwise": (_ORANGE, "Σx² accumulated pairwise (tree) in bf16"),
    }
    for key, (color, label) in styles.items():
        mx = [m for m, _ in series[key]]
        md = [max(p, 1e-2) for _, p in series[key]]
        ax.plot(dims, mx, "-o", color=color, label=f"{label}: max")
        ax.plot(dims, md, "--", color=color, alpha=0.7, label="  … median")
    ax.plot(dims, bound, "-", color="k", lw=1.2, label="the suite's bound (bounds.rmsnorm, bf16): max over elements")
    ax.axhline(0.5, color=_GREY, lw=0.8, ls=":")
    ax.text(dims[0], 0.55, "0.5 ULP = correctly rounded", color=_GREY, fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("D (features per row)")
    ax.set_ylabel("|y − golden| in ULPs of bf16 (log)")
    ax.set_title(
        "RMSNorm in bf16: error vs D by accumulation precision\n"
        f"(x ~ N(0.5, 1) in bf16, γ ~ 1 + 0.1·N(0, 1), {rows} rows per D; the rest in fp32, rounded once)",
        fontsize=11,
    )
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, which="major", alpha=0.3)
    return fig


def _skip_path_only(block: Any, x: torch.Tensor) -> torch.Tensor:
    """The block's forward with the branch inputs detached: the gradient flows through the residual path only."""
    if isinstance(block, _post_norm_cls()):
        h = block.attn_norm(x + block.attn(x.detach()))
        return block.ffn_norm(h + block.ffn(h.detach()))
    h = x + block.attn(block.attn_norm(x.detach()))
    return h + block.ffn(block.ffn_norm(h.detach()))


def _post_norm_cls() -> type:

    import nanolm_core

    return nanolm_core.PostNormBlock


def _stack_input_grads(block_cls: type, layers: int, seed: int, gain: float | None, skip_only: bool) -> np.ndarray:
    """‖∂loss/∂x_l‖ for l = 0..L (x_0 the stack input) of a random fp64 stack, loss = ⟨x_L, t⟩ with random t.

    gain None: PyTorch's default nn.Linear init; else every weight ~ N(0, gain²/fan_in).
    """
    import numpy as np
    import torch

    import nanolm_core

    cfg = nanolm_core.ModelConfig(dim=64, n_layers=layers, n_heads=4, n_kv_heads=2, max_seq_len=16)
    gen = torch.Generator().manual_seed(seed)
    torch_state = torch.random.get_rng_state()
    try:  # module init draws from the global generator: use a private state and restore it
        torch.manual_seed(seed)
        blocks = [block_cls(cfg).double() for _ in range(layers)]
    finally:
        torch.random.set_rng_state(torch_state)
    with torch.no_grad():
        for block in blocks:
            for p in block.parameters():
                if gain is not None and p.dim() == 2:
                    p.normal_(0.0, gain / math.sqrt(p.shape[1]), generator=gen)
    x = torch.randn(4, 16, cfg.dim, generator=gen, dtype=torch.float64)
    acts = [x.requires_grad_()]
    for block in blocks:
        acts.append(_skip_path_only(block, acts[-1]) if skip_only else block(acts[-1]))
        acts[-1].retain_grad()
    target = torch.randn(acts[-1].shape, generator=gen, dtype=torch.float64)
    (acts[-1] * target).sum().backward()
    return np.array([a.grad.norm().item() for a in acts])


def plot_grad_vs_depth() -> Any:
    """Gradient norm k layers below the output of a 32-layer stack: pre-norm vs post-norm, skip path and total."""
    import numpy as np

    import nanolm_core

    L, seeds = 32, range(3)
    depth = np.arange(L + 1)  # k: layers between x and the output
    fig = _figure(12.0, 4.8)
    panels = (
        (
            True,
            "through the residual (skip) path only",
            "branch inputs detached: each post-norm rescales by ≈ √D / ‖x + f(x)‖",
        ),
        (
            False,
            "total gradient (skip path + branches)",
            "at initialisation the branch Jacobians refill what the norms remove",
        ),
    )
    for i, (skip_only, title, subtitle) in enumerate(panels):
        ax = fig.add_subplot(1, 2, i + 1)
        stacks = ((nanolm_core.Block, _BLUE, "pre-norm"), (nanolm_core.PostNormBlock, _RED, "post-norm"))
        for cls, color, kind in stacks:
            for gain, style, init in ((None, "-o", "default init"), (1.0, "--s", "init N(0, 1/fan_in)")):
                curves = np.array([g / g[-1] for g in (_stack_input_grads(cls, L, s, gain, skip_only) for s in seeds)])[
                    :, ::-1
                ]
                ax.plot(
                    depth,
                    np.exp(np.log(curves).mean(axis=0)),
                    style,
                    ms=3,
                    color=color,
                    alpha=1.0 if gain is None else 0.6,
                    label=f"{kind}, {init}",
                )
        ax.plot(depth, 0.9**depth, ":", color=_GREY, label="0.9^k (the course: 0.9³² ≈ 0.03)")
        if skip_only:
            ax.text(
                L, 1.5, "pre-norm: exactly 1 for both inits (the identity path)", color=_BLUE, fontsize=8, ha="right"
            )
        ax.set_yscale("log")
        ax.set_ylim(1e-7 if skip_only else None, 3 if skip_only else None)
        ax.set_xlabel("k = layers between x and the output (32-layer stack)")
        ax.set_ylabel("‖∂loss/∂x‖ relative to the output (log)")
        ax.set_title(f"{title}\n({subtitle})", fontsize=10)
        ax.legend(fontsize=8, loc="lower left")
        ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(
        "Gradient through depth: pre-norm keeps an identity path, post-norm puts a norm on it\n"
        "(nanolm_core Block / PostNormBlock, D=64, H=4, G=2, T=16, fp64; geometric mean of 3 seeds)",
        fontsize=11,
    )
    return fig


def plot_geometry() -> Any:
    """D = 3: RMSNorm outputs on the sphere of radius √3, LayerNorm's on its great circle ⊥ 𝟏; norms at D = 256."""
    import numpy as np
    import torch

    import nanolm_core

    gen = torch.Generator().manual_seed(0)
    x3 = torch.randn(400, 3, generator=gen, dtype=torch.float64) * torch.exp(
        torch.randn(400, 1, generator=gen, dtype=torch.float64)
    )
    rms3 = nanolm_core.RMSNorm(3, eps=0.0).double()
    ln3 = nanolm_core.LayerNorm(3, eps=0.0).double()
    with torch.no_grad():
        y_rms, y_ln = rms3(x3).numpy(), ln3(x3).numpy()

    fig = _figure(11.5, 5.0)
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 40), np.linspace(0, np.pi, 20))
    r = math.sqrt(3)
    ax.plot_wireframe(
        r * np.cos(u) * np.sin(v), r * np.sin(u) * np.sin(v), r * np.cos(v), color=_GREY, lw=0.3, alpha=0.4
    )
    ax.scatter(*y_rms.T, s=6, color=_BLUE, label="RMSNorm(x): ‖y‖ = √3")
    ax.scatter(*y_ln.T, s=6, color=_RED, label="LayerNorm(x): ‖y‖ = √3 and y ⊥ $\\mathbf{1}$")
    ax.quiver(0, 0, 0, 1.2, 1.2, 1.2, color="k", lw=1.5, arrow_length_ratio=0.15)
    ax.text(1.3, 1.3, 1.3, r"$\mathbf{1}$", fontsize=12)
    ax.set_box_aspect((1, 1, 1))
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):  # three ticks: the default seven overlap on the slanted axes
        axis.set_ticks([-1.5, 0.0, 1.5])
    ax.set_xlabel("y₁")
    ax.set_ylabel("y₂")
    ax.set_zlabel("y₃")
    ax.set_title(
        "D = 3, eps = 0: outputs of 400 random x\n(sphere of radius √D; LayerNorm: its great circle ⊥ $\\mathbf{1}$)",
        fontsize=10,
    )
    ax.legend(fontsize=8, loc="upper left")

    D = 256
    xd = (torch.randn(2000, D, generator=gen, dtype=torch.float64) + 0.5) * torch.exp(
        torch.randn(2000, 1, generator=gen, dtype=torch.float64)
    )
    with torch.no_grad():
        n_in = xd.norm(dim=-1).numpy() / math.sqrt(D)
        n_rms = nanolm_core.RMSNorm(D).double()(xd).norm(dim=-1).numpy() / math.sqrt(D)
        n_ln = nanolm_core.LayerNorm(D).double()(xd).norm(dim=-1).numpy() / math.sqrt(D)
    ax2 = fig.add_subplot(1, 2, 2)
    bins = np.logspace(-1.5, 1.5, 80)
    ax2.hist(n_in, bins=bins, color=_GREY, alpha=0.6, label="input x: ‖x‖/√D")
    ax2.hist(n_rms, bins=bins, color=_BLUE, alpha=0.8, label="RMSNorm(x): ‖y‖/√D")
    ax2.hist(n_ln, bins=bins, color=_RED, alpha=0.5, histtype="step", lw=2, label="LayerNorm(x): ‖y‖/√D")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("‖·‖ / √D (log)")
    ax2.set_ylabel("rows (log)")
    ax2.set_title(
        f"D = {D}: 2000 rows with random scale and mean 0.5\nboth norms map every row to radius √D", fontsize=10
    )
    ax2.legend(fontsize=8)
    return fig


def plot_eps_placement() -> Any:
    """Relative difference of x/(rms + eps) from x/sqrt(ms + eps) vs rms, measured in fp32 and exact."""
    import numpy as np
    import torch

    import nanolm_core
    from properties.gallery.eps_outside_sqrt import RMSNorm as EpsOutside

    eps, D = 1e-6, 64
    scales = np.logspace(-6, 2, 65)
    gen = torch.Generator().manual_seed(0)
    base = torch.randn(1, D, generator=gen, dtype=torch.float64)
    base = base / base.pow(2).mean().sqrt()  # rms exactly 1 (in fp64)
    measured = []
    ref, wrong = nanolm_core.RMSNorm(D, eps), EpsOutside(D, eps)
    with torch.no_grad():
        for s in scales:
            x = (base * s).float()
            exact = torch.from_numpy(np.asarray(_golden_rmsnorm(x, ref.weight, eps).hi))
            measured.append(float(((wrong(x).double() - exact).abs() / exact.abs()).max()))
    exact_curve = np.abs(np.sqrt(scales**2 + eps) / (scales + eps) - 1)  # |sqrt(ms + eps)/(rms + eps) − 1|

    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    ax.plot(scales, exact_curve, "-", color=_RED, label="x/(rms + eps) vs x/√(ms + eps): exact maths")
    ax.plot(scales, measured, "o", ms=3, color=_ORANGE, label="gallery eps_outside_sqrt in fp32 vs golden")
    for u, name in ((2.0**-8, "bf16 u = 2⁻⁸"), (2.0**-24, "fp32 u = 2⁻²⁴")):
        ax.axhline(u, color=_GREY, lw=0.8, ls=":")
        ax.text(scales[0], u * 1.3, name, color=_GREY, fontsize=8)
    ax.axvline(math.sqrt(eps), color=_BLUE, lw=0.8, ls="--")
    ax.text(math.sqrt(eps) * 1.2, 1e-5, "rms = √eps", color=_BLUE, fontsize=8)
    ax.annotate(
        "41% at rms = 1e-3",
        xy=(1e-3, 0.41),
        xytext=(1e-1, 0.3),
        fontsize=9,
        arrowprops=dict(arrowstyle="->", color="k"),
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-10, 3e3)
    ax.set_xlabel("input scale: rms(x) (log)")
    ax.set_ylabel("max relative difference (log)")
    ax.set_title(
        f"eps placement: inside vs outside the square root (eps = {eps:g}, D = {D})\n"
        "invisible at unit scale, tens of percent when rms is near √eps"
    )
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="major", alpha=0.3)
    return fig


def plot_silu_cancellation() -> Any:
    """bf16 relative error of silu(z) computed as z·σ(z) (torch) vs z·(1 − σ(−z)) (gallery), z in [−12, 4]."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from properties.gallery.silu_cancellation import silu_by_complement
    from properties.numerics import ulp

    z = torch.linspace(-12, 4, 2001, dtype=torch.float64).to(torch.bfloat16).unique()
    exact = (z.double() * torch.sigmoid(z.double())).numpy()
    fig = _figure(7.5, 4.5)
    ax = fig.add_subplot()
    for y, color, label in (
        (F.silu(z), _BLUE, "F.silu(z) in bf16"),
        (silu_by_complement(z), _RED, "z·(1 − σ(−z)) in bf16 (gallery: silu_cancellation)"),
    ):
        rel = np.abs(ulp.as_f64(y) - exact) / np.maximum(np.abs(exact), 1e-300)
        ax.plot(ulp.as_f64(z), np.maximum(rel, 1e-5), ".", ms=2, color=color, label=label)
    ax.axhline(2.0**-8, color=_GREY, lw=0.8, ls=":")
    ax.text(3.9, 2.0**-8 * 1.3, "bf16 u = 2⁻⁸", color=_GREY, fontsize=8, ha="right")
    ax.set_yscale("log")
    ax.set_xlabel("z (bf16 values)")
    ax.set_ylabel("relative error of silu(z) (log, floored at 1e-5)")
    ax.set_title("SiLU written as z·(1 − σ(−z)) cancels for negative z in bf16")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(True, which="major", alpha=0.3)
    return fig


# ---------------------------------------------------------------------------------------------- AddRMSNorm


def plot_add_norm_orders() -> Any:
    """AddRMSNorm in bf16/fp16 vs D: the unfused and fused orders differ, both inside the bound; a bf16 Σh² does not.

    Rows: a stream r ~ N(0.5, 1) and a branch x of std 2^-5 (a late layer's small update), γ ~ 1 + 0.1·N(0, 1).
    """
    import numpy as np
    import torch

    import golden
    import nanolm_core
    from properties.gallery.add_norm_half_sum_of_squares import AddRMSNorm as HalfSumOfSquares
    from properties.numerics import bounds, ulp

    gen = torch.Generator().manual_seed(0)
    dims = [16, 64, 256, 1024, 4096, 16384]
    rows, eps = 16, 1e-6
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    differ: dict[str, list[float]] = {k: [] for k in dtypes}
    room: dict[str, list[float]] = {"rounded h (unfused)": [], "unrounded sum (fused)": [], "Σh² in bf16": []}
    for D in dims:
        for name, dt in dtypes.items():
            r = (torch.randn(rows, D, generator=gen, dtype=torch.float64) + 0.5).to(dt)
            x = (torch.randn(rows, D, generator=gen, dtype=torch.float64) / 32).to(dt)
            w = (1 + 0.1 * torch.randn(D, generator=gen, dtype=torch.float64)).to(dt)
            unfused = nanolm_core.modules.rms_norm(x + r, w, eps)
            fused = nanolm_core.modules.rms_norm(x.float() + r.float(), w, eps).to(dt)
            differ[name].append(float((unfused != fused).double().mean()))
            if name != "bf16":
                continue
            exact, _ = golden.add_rmsnorm(x, r, w, eps)
            allowed = bounds.add_rmsnorm(x, r, w, eps, dt)[0].abs
            half = HalfSumOfSquares(D, eps).to(dt)
            with torch.no_grad():
                half.weight.copy_(w)
                wrong, _ = half(x, r)
            for key, y in zip(room, (unfused, fused, wrong), strict=True):
                room[key].append(float(np.max(ulp.abs_error(y, exact) / allowed)))

    fig = _figure(11.0, 4.6)
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for (name, share), color in zip(differ.items(), (_BLUE, _ORANGE), strict=True):
        left.plot(dims, [100 * v for v in share], "-o", color=color, label=name)
    left.set_ylim(0, 50)
    left.set_xlabel("D (features per row)")
    left.set_ylabel("elements where the two orders differ (%)")
    left.set_title("norm of the rounded h vs of the unrounded sum:\nthe same share differs at every D (by 1 ULP)")
    left.legend(fontsize=8)
    styles = {
        "rounded h (unfused)": (_BLUE, "norm of the rounded h (the reference, vLLM)"),
        "unrounded sum (fused)": (_GREEN, "norm of the fp32 sum (fused kernels, ONNX Runtime)"),
        "Σh² in bf16": (_RED, "Σh² accumulated in bf16 (gallery: add_norm_half_sum_of_squares)"),
    }
    for key, (color, label) in styles.items():
        right.plot(dims, room[key], "-o", color=color, label=label)
    right.axhline(1.0, color="k", lw=1.2, label="the suite's bound (bounds.add_rmsnorm): headroom 1")
    right.set_yscale("log")
    right.set_xlabel("D (features per row)")
    right.set_ylabel("headroom: max |y − golden| ÷ bound (log; > 1 fails)")
    right.set_title("bf16 against the norm of the exact sum:\nboth orders inside the bound, a bf16 Σh² is not")
    right.legend(fontsize=7.5, loc="upper left")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(f"AddRMSNorm in 16 bits (stream ~ N(0.5, 1), branch of std 2⁻⁵, {rows} rows per D)", fontsize=11)
    return fig


@dataclasses.dataclass(frozen=True)
class Plot:
    """One figure: its file (under ``--out``) and the function that draws it (→ a matplotlib Figure)."""

    file: str
    draw: Callable[[], Any]


PLOTS: dict[str, Plot] = {
    "error_vs_d": Plot("rmsnorm_bf16_error_vs_d.png", plot_error_vs_d),
    "grad_vs_depth": Plot("grad_norm_vs_depth.png", plot_grad_vs_depth),
    "geometry": Plot("rmsnorm_geometry.png", plot_geometry),
    "eps_placement": Plot("eps_placement.png", plot_eps_placement),
    "silu_cancellation": Plot("silu_cancellation.png", plot_silu_cancellation),
    "add_norm_orders": Plot("add_norm_orders.png", plot_add_norm_orders),
}


def render(names: list[str], out_dir: Path) -> list[Path]:
    """Make the named figures (``["all"]`` for every one) under ``out_dir``; returns the written paths."""
    selected = list(PLOTS) if "all" in names else names
    return [_save(PLOTS[name].draw(), out_dir, PLOTS[name].file) for name in selected]


def _run(args: argparse.Namespace) -> int:
    unknown = [n for n in args.names if n != "all" and n not in PLOTS]
    if unknown:
        print(f"nanolm-verify plot: unknown figure {', '.join(unknown)}; choose from all, {', '.join(PLOTS)}")
        return 2
    from properties.commands import arguments
    from properties.running.loading import UsageError

    try:  # the folder, before the figures are computed
        arguments.output_dir(args.out, "--out")
    except UsageError as exc:
        print(f"nanolm-verify plot: error: {exc}", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("nanolm-verify plot: matplotlib is needed: pip install 'nanolm-verify[plot]'")
        return 2
    for path in render(args.names, Path(args.out)):
        print(f"wrote {path}")
    return 0


def _summary(func: Callable[..., Any]) -> str:
    """A figure's docstring summary (its first paragraph) on one line."""
    return " ".join((func.__doc__ or "").split("\n\n")[0].split())


def register(subparsers: Any) -> None:
    """Add ``plot NAME|all [--out DIR]`` to the ``nanolm-verify`` parser."""
    parser = subparsers.add_parser(
        "plot",
        help="make the documentation's figures (PNG)",
        description="Make the documentation's figures as PNG files:\n"
        + "\n".join(
            line for name, p in PLOTS.items() for line in wrap(f"  {name}: {_summary(p.draw)}", 79, hang="    ")
        ),
        epilog="examples:\n  nanolm-verify plot all\n  nanolm-verify plot eps_placement --out /tmp/figs\n\n"
        "exit status:\n  0  the figures were written\n  2  usage error: an unknown figure, no matplotlib",
        formatter_class=Formatter,
    )
    parser.add_argument("names", nargs="+", metavar="NAME", help=f"all, or any of: {', '.join(PLOTS)}")
    parser.add_argument("--out", default="docs", help="output folder (default: docs)")
    parser.set_defaults(func=_run)
