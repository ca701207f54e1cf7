"""The recipe of the stored golden corpus: which cases each family holds — their ids, dtypes, shapes and input
values — as deterministic functions of seeds (:func:`recipe_values`: PCG64 bit streams turned into values by exact
arithmetic and correct rounding, stable across numpy and torch versions). ``golden/data/generate.py`` computes
their golden values from it and writes the corpus; :mod:`golden.corpus` checks every stored case against it (a
case it does not define, another dtype, shape or recipe, a missing case: refused). Large inputs are *recipes*
(:class:`Recipe`), stored as such and generated on use."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from golden.formats import fmt
from golden.rounding import round_to_grid
from nanolm_core import ModelConfig

RECIPE_WEIGHTS = 2**15  # a Block weight of at least this many values is stored as its recipe


def recipe_values(
    seed: int,
    shape: list[int],
    dtype: str,
    scale: float | list[float],
    mean: float | list[float] | None = None,
    set_values: list[tuple[int, float]] = (),
) -> np.ndarray:
    """Deterministic inputs from a seed: PCG64 raw 64-bit words w → v = (w >> 11)·2^-53 ∈ [0, 1),
    x = scale·√3·(2v − 1) (uniform, variance scale²) [+ mean], then x[i] = value for each (flat index i, value)
    of ``set_values``, rounded to nearest-even in ``dtype``. ``scale`` and ``mean`` may be lists, one per
    index of the first axis (one per row of a (rows, D) input). Only the PCG64 *bit stream* is used (stable
    across numpy versions by numpy's policy) and our own exact rounding."""
    n = int(np.prod(shape))
    raw = np.random.Generator(np.random.PCG64(seed)).bit_generator.random_raw(n)
    v = (raw >> np.uint64(11)).astype(np.float64) * 2.0**-53
    lead = (-1,) + (1,) * (len(shape) - 1)
    s = np.asarray(scale, dtype=np.float64).reshape(lead) if isinstance(scale, list) else scale
    x = ((2.0 * v - 1.0).reshape(shape) * (s * math.sqrt(3.0))).reshape(-1)
    if mean is not None:
        m = np.asarray(mean, dtype=np.float64).reshape(lead) if isinstance(mean, list) else mean
        x = (x.reshape(shape) + m).reshape(-1)
    for i, value in set_values:
        x[i] = value
    return round_to_grid(x, None, fmt(dtype).dtype).reshape(shape)


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Inputs stored as their recipe (see :func:`golden.recipe_values`); scale and mean per row if lists."""

    seed: int
    shape: tuple[int, ...]
    scale: float | list[float]
    mean: float | list[float] | None = None
    set_values: tuple[tuple[int, float], ...] = ()

    def values(self, dtype: str) -> np.ndarray:
        return recipe_values(self.seed, list(self.shape), dtype, self.scale, self.mean, list(self.set_values))

    def spec(self, dtype: str) -> dict[str, Any]:
        r: dict[str, Any] = {"seed": self.seed, "dtype": dtype, "scale": self.scale}
        if self.mean is not None:
            r["mean"] = self.mean
        if self.set_values:
            r["set"] = [[i, float(v).hex()] for i, v in self.set_values]
        return {"shape": list(self.shape), "recipe": r}


def _vals(seed: int, shape: tuple[int, ...], dtype: str, scale: float = 1.0, mean: float = 0.0) -> np.ndarray:
    """Exact values of ``dtype``: (recipe uniform of std ``scale``) + mean, rounded to dtype."""
    base = recipe_values(seed, list(shape), "float64", scale)
    return round_to_grid(base + mean, None, fmt(dtype).dtype)


def _fp16(a: np.ndarray) -> np.ndarray:
    return round_to_grid(a, None, torch.float16)


def _gamma(seed: int, D: int, dtype: str) -> np.ndarray:
    w = _vals(seed, (D,), dtype, 1.0, 0.3)
    w[:: max(1, D // 7)] *= -1.0  # negative entries
    if D > 2:
        w[1] = 0.0  # and a zero
    return w


# ------------------------------------------------------------------------------------------- cases
# model-sized RMSNorm rows: (name, description, (scale, mean, outlier) per dtype kind); fp16 keeps |x| ≤ 200
REGIMES = (
    ("mean", "std 1, mean 0.5", lambda dt: (1.0, 0.5, None)),
    ("outlier", "std 1, one outlier", lambda dt: (1.0, 0.0, 200.0 if dt == "float16" else 1e3)),
    ("constant", "constant 0.7 (correlated rounding errors)", lambda dt: (0.0, 0.7, None)),
    ("small", "std 1e-3 (mean square ≈ ε)", lambda dt: (1e-3, 0.0, None)),
)
LARGE_D = (2048, 4096, 5120, 8192, 16384)


def rmsnorm_cases() -> Iterator[dict[str, Any]]:
    """D ∈ {1, 2, 3, 8, 123, 769}: row scales 1e-4…1e4 with non-zero mean, a single outlier, a zero row, an
    ε-dominated row, fp16 |x| > 256; dtypes rotate through bf16/fp16/fp32/fp64. Then model sizes
    D ∈ {2048, 4096, 5120, 8192, 16384} in every dtype, two rows of different regimes (REGIMES) each."""
    yield from _rmsnorm_small()
    yield from _rmsnorm_large()


def _rmsnorm_large() -> Iterator[dict[str, Any]]:
    for i, D in enumerate(LARGE_D):
        for j, dt in enumerate(("bfloat16", "float16", "float32", "float64")):
            rows = [REGIMES[(i + j + r) % len(REGIMES)] for r in range(2)]
            params = [kind(dt) for _, _, kind in rows]
            outliers = tuple((r * D + D // 3, o) for r, (_, _, o) in enumerate(params) if o is not None)
            yield {
                "id": f"D{D}-{rows[0][0]}-{rows[1][0]}-{dt}",
                "description": f"model size; row 0: {rows[0][1]}; row 1: {rows[1][1]}",
                "dtype": dt,
                "x": Recipe(
                    7_000_000 + 10 * D + 2 * j, (2, D), [p[0] for p in params], [p[1] for p in params], outliers
                ),
                "weight": Recipe(7_000_001 + 10 * D + 2 * j, (D,), 1.0, 0.3, ((1, 0.0),)),  # negative entries, a zero
            }


def _rmsnorm_small() -> Iterator[dict[str, Any]]:
    dtypes = ["bfloat16", "float32", "float16", "float64"]
    for i, D in enumerate((1, 2, 3, 8, 123, 769)):
        dt = dtypes[i % 4]
        scales = (1e-2, 1.0, 1e2) if dt == "float16" else (1e-4, 1e-2, 1.0, 1e2, 1e4)
        x = np.stack([_vals(1000 * D + k, (D,), dt, s, 0.5 * s) for k, s in enumerate(scales)])
        yield {
            "id": f"D{D}-scales-{dt}",
            "description": f"row scales {scales}, mean 0.5·scale",
            "dtype": dt,
            "x": x,
            "weight": _gamma(D, D, dt),
        }
        x = np.stack([_vals(2000 * D, (D,), dt, 1.0, 0.0), np.zeros(D)])
        x[0, 0] = 200.0 if dt == "float16" else 1e3  # a single outlier, and a zero row (y = 0 with ε > 0)
        yield {
            "id": f"D{D}-outlier-zero-{dt}",
            "description": "single outlier row; all-zero row",
            "dtype": dt,
            "x": x,
            "weight": _gamma(D + 1, D, dt),
        }
        eps_dt = "float32" if dt == "float16" else dt  # fp16 cannot hold rows of 1e-5
        yield {
            "id": f"D{D}-eps-dominated-{eps_dt}",
            "description": "mean square ≪ ε (rows of scale 1e-5)",
            "dtype": eps_dt,
            "x": _vals(3000 * D, (1, D), eps_dt, 1e-5, 0.0),
            "weight": _gamma(D + 2, D, eps_dt),
        }
        yield {
            "id": f"D{D}-fp16-above-256",
            "description": "fp16 with |x| > 256 (x² overflows fp16)",
            "dtype": "float16",
            "x": _fp16(np.abs(_vals(4000 * D, (1, D), "float16", 150.0, 0.0)) + 257.0),
            "weight": _gamma(D + 3, D, "float16"),
        }


def swiglu_cases() -> Iterator[dict[str, Any]]:
    """(D, F) from (2, 2) to (48, 128) in every dtype; model shapes with weights by recipe: a Llama-7B row
    (D = 4096, F = 11008), a Llama-3-8B row (D = 4096, F = 14336), F = 28672 at D = 1024 (bf16) and D = 256 (fp32)."""
    for k, (D, Fh, dt) in enumerate(
        (
            (2, 2, "float32"),
            (8, 24, "bfloat16"),
            (16, 40, "float64"),
            (32, 64, "float16"),
            (48, 128, "bfloat16"),
            (40, 96, "float32"),
        )
    ):
        yield {
            "id": f"D{D}-F{Fh}-{dt}",
            "description": "uniform weights of std 1/√fan_in, x with mean 0.3",
            "dtype": dt,
            "x": _vals(50 + k, (3, D), dt, 1.0, 0.3),
            "w_gate": _vals(60 + k, (Fh, D), dt, D**-0.5),
            "w_up": _vals(70 + k, (Fh, D), dt, D**-0.5),
            "w_down": _vals(80 + k, (D, Fh), dt, Fh**-0.5),
        }
    for seed, name, what, rows, D, Fh, dt in (
        (91, "llama7b-row-bfloat16", "one Llama-7B-shaped row", 1, 4096, 11008, "bfloat16"),
        (101, "llama3-8b-row-bfloat16", "one Llama-3-8B-shaped row", 1, 4096, 14336, "bfloat16"),
        (111, "D1024-F28672-bfloat16", "two rows at the widest F (28672)", 2, 1024, 28672, "bfloat16"),
        (121, "D256-F28672-float32", "two fp32 rows at the widest F (28672)", 2, 256, 28672, "float32"),
    ):
        yield {
            "id": name,
            "description": f"{what} (D={D}, F={Fh}), weights by recipe",
            "dtype": dt,
            "x": Recipe(seed, (rows, D), 1.0, None if rows == 1 else 0.3),
            "w_gate": Recipe(seed + 1, (Fh, D), D**-0.5),
            "w_up": Recipe(seed + 2, (Fh, D), D**-0.5),
            "w_down": Recipe(seed + 3, (D, Fh), Fh**-0.5),
        }


def block_cases() -> Iterator[dict[str, Any]]:
    """Pre-norm Blocks with 1 < G < H and 5 ≤ T ≤ 7 in bf16/fp32/fp64; and long sequences, T = 1024 at
    D/H/G = 32/4/2, rope_theta 10000 and 500000, so that RoPE is checked at positions up to 1023. Then (generator
    2.1.0: sensitive cases, issue 18) T = 4096 with sharp attention (q/k weights ×4: softmax far from uniform, so a
    wrong score, angle or probability moves the output) in fp32 and bf16, and a head dimension of real models
    (K = 64, D/H/G = 256/4/2, F = 768) in fp32 and bf16."""
    for k, (D, H, G, T, dt) in enumerate(
        ((32, 4, 2, 6, "bfloat16"), (32, 8, 4, 5, "float32"), (24, 6, 3, 7, "float64"))
    ):
        yield _block(k, D, H, G, dt, 10000.0, "1 < G < H, T ≥ 5, random norms", _vals(500 + k, (1, T, D), dt, 1.0, 0.2))
    for k, (theta, dt) in enumerate(((10000.0, "float32"), (500000.0, "float32"), (500000.0, "bfloat16")), start=3):
        x = Recipe(500 + k, (1, 1024, 32), 1.0, 0.2)
        yield _block(k, 32, 4, 2, dt, theta, f"long sequence (T = 1024), rope_theta {theta:g}, random norms", x)
    for k, dt in enumerate(("float32", "bfloat16"), start=6):
        x = Recipe(500 + k, (1, 4096, 32), 1.0)
        what = "long sequence (T = 4096), sharp attention (q/k weights ×4), rope_theta 10000, random norms"
        yield _block(k, 32, 4, 2, dt, 10000.0, what, x, logit_scale=4.0, suffix="-sharp")
    for k, dt in enumerate(("float32", "bfloat16"), start=8):
        x = Recipe(500 + k, (1, 16, 256), 1.0)
        what = "a head dimension of real models (K = 64, D = 256, F = 768), sharp attention (q/k ×2), random norms"
        yield _block(k, 256, 4, 2, dt, 500000.0, what, x, logit_scale=2.0, ffn_dim=768, suffix="-K64")


def _block(
    k: int,
    D: int,
    H: int,
    G: int,
    dt: str,
    theta: float,
    description: str,
    x: Any,
    *,
    logit_scale: float = 1.0,
    ffn_dim: int | None = None,
    suffix: str = "",
) -> dict[str, Any]:
    T = x.shape[1]
    F = ffn_dim or 2 * D
    cfg = ModelConfig(dim=D, n_heads=H, n_kv_heads=G, ffn_dim=F, max_seq_len=max(16, T), rope_theta=theta)
    K = D // H
    shapes = {
        "attn_norm.weight": (D,),
        "attn.wq.weight": (H * K, D),
        "attn.wk.weight": (G * K, D),
        "attn.wv.weight": (G * K, D),
        "attn.wo.weight": (D, H * K),
        "ffn_norm.weight": (D,),
        "ffn.w_gate.weight": (F, D),
        "ffn.w_up.weight": (F, D),
        "ffn.w_down.weight": (D, F),
    }
    fields = ("dim", "n_heads", "n_kv_heads", "ffn_dim", "max_seq_len", "norm_eps", "rope_theta")
    rec: dict[str, Any] = {
        "id": f"D{D}-H{H}-G{G}-T{T}-{dt}" + ("" if T < 16 else f"-theta{theta:g}") + suffix,
        "description": description,
        "dtype": dt,
        "config": {f: getattr(cfg, f) for f in fields},
        "x": x,
    }
    for j, (name, shape) in enumerate(shapes.items()):
        scale = shape[-1] ** -0.5 * (logit_scale if name in ("attn.wq.weight", "attn.wk.weight") else 1.0)
        seed = 600 + 10 * k + j
        if "norm" in name:
            rec[name] = _gamma(seed, D, dt)
        else:  # the same values either way (_vals rounds the recipe's float64 values to dt): large ones by recipe
            large = np.prod(shape) >= RECIPE_WEIGHTS
            rec[name] = Recipe(seed, shape, scale) if large else _vals(seed, shape, dt, scale)
    return rec


def add_rmsnorm_cases() -> Iterator[dict[str, Any]]:
    """D = 8192 in every dtype, inputs by recipe, two rows: a small branch (std 2⁻⁵) on a stream of std 1, mean 0.5
    — most of the branch's bits are rounded away in h, where the unfused and fused orders differ —; and a branch
    of std 0.05 on a constant stream 0.7 (correlated rounding errors in Σh²)."""
    D = 8192
    for j, dt in enumerate(("bfloat16", "float16", "float32", "float64")):
        yield {
            "id": f"D{D}-small-branch-constant-stream-{dt}",
            "description": "row 0: branch std 2^-5 on a stream of std 1, mean 0.5; row 1: branch std 0.05 on 0.7",
            "dtype": dt,
            "x": Recipe(8_000_000 + 10 * j, (2, D), [2.0**-5, 0.05], [0.0, 0.0]),
            "residual": Recipe(8_000_001 + 10 * j, (2, D), [1.0, 0.0], [0.5, 0.7]),
            "weight": Recipe(8_000_002 + 10 * j, (D,), 1.0, 0.3, ((1, 0.0),)),  # negative entries, a zero
        }


GENERATORS = {"rmsnorm": rmsnorm_cases, "swiglu": swiglu_cases, "block": block_cases, "add_rmsnorm": add_rmsnorm_cases}
