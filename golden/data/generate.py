"""Generator of the stored golden corpus (run through ``nanolm-verify golden regen``; see README.md here).

Every case is a deterministic function of this file: inputs come from seeded PCG64 bit streams turned into
values by exact arithmetic and correct rounding to the case dtype, then stored exactly (hex) — except the
Llama-7B-shaped SwiGLU row, whose 135 M weights are stored as their recipe + sha256. Golden values come from
``golden`` with ``validate="full"`` (every output recomputed by plain mpmath at 192 bits) where that costs
under a few seconds, and ``validate="sample"`` (certified sums + mpmath checks of the DD kernels) otherwise.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import torch

from golden import corpus, engine

GENERATOR_VERSION = "1.0.0"
EPS = 1e-6


def _vals(seed: int, shape: tuple[int, ...], dtype: str, scale: float = 1.0, mean: float = 0.0) -> np.ndarray:
    """Exact values of ``dtype``: (recipe uniform of std ``scale``) + mean, rounded to dtype."""
    from golden.rounding import round_to_grid

    base = corpus.recipe_values(seed, list(shape), "float64", scale)
    return round_to_grid(base + mean, None, corpus.DTYPE_NAMES[dtype])


def _fp16(a: np.ndarray) -> np.ndarray:
    from golden.rounding import round_to_grid

    return round_to_grid(a, None, torch.float16)


def _gamma(seed: int, D: int, dtype: str) -> np.ndarray:
    w = _vals(seed, (D,), dtype, 1.0, 0.3)
    w[:: max(1, D // 7)] *= -1.0  # negative entries
    if D > 2:
        w[1] = 0.0  # and a zero
    return w


# ------------------------------------------------------------------------------------------- cases
def rmsnorm_cases() -> Iterator[dict[str, Any]]:
    """D ∈ {1, 2, 3, 8, 123, 769, 4096, 8192}; regimes: row scales 1e-4…1e4 with non-zero mean, a single
    outlier, a zero row, an ε-dominated row, fp16 |x| > 256; dtypes rotate through bf16/fp16/fp32/fp64."""
    dtypes = ["bfloat16", "float32", "float16", "float64"]
    for i, D in enumerate((1, 2, 3, 8, 123, 769, 4096, 8192)):
        dt = dtypes[i % 4]
        big = D >= 4096
        scales = (1e-2, 1.0, 1e2) if dt == "float16" else (1e-4, 1e-2, 1.0, 1e2, 1e4)
        rows = [_vals(1000 * D + k, (D,), dt, s, 0.5 * s) for k, s in enumerate(scales)]
        if big:  # keep the stored corpus small: one row per regime at D ≥ 4096
            scales, rows = scales[2:3], rows[2:3]
        x = np.stack(rows)
        yield {
            "id": f"D{D}-scales-{dt}",
            "description": f"row scales {scales}, mean 0.5·scale",
            "dtype": dt,
            "D": D,
            "x": x,
            "weight": _gamma(D, D, dt),
        }
        if D == 8192:
            continue  # keep the stored corpus small: D = 8192 has one row
        x = np.stack([_vals(2000 * D, (D,), dt, 1.0, 0.0), np.zeros(D)])[: 1 if big else 2]
        x[0, 0] = 200.0 if dt == "float16" else 1e3  # a single outlier, and a zero row (y = 0 with ε > 0)
        yield {
            "id": f"D{D}-outlier-zero-{dt}",
            "description": "single outlier row; all-zero row",
            "dtype": dt,
            "D": D,
            "x": x,
            "weight": _gamma(D + 1, D, dt),
        }
        if big:
            continue
        eps_dt = "float32" if dt == "float16" else dt  # fp16 cannot hold rows of 1e-5
        yield {
            "id": f"D{D}-eps-dominated-{eps_dt}",
            "description": "mean square ≪ ε (rows of scale 1e-5)",
            "dtype": eps_dt,
            "D": D,
            "x": _vals(3000 * D, (1, D), eps_dt, 1e-5, 0.0),
            "weight": _gamma(D + 2, D, eps_dt),
        }
        yield {
            "id": f"D{D}-fp16-above-256",
            "description": "fp16 with |x| > 256 (x² overflows fp16)",
            "dtype": "float16",
            "D": D,
            "x": _fp16(np.abs(_vals(4000 * D, (1, D), "float16", 150.0, 0.0)) + 257.0),
            "weight": _gamma(D + 3, D, "float16"),
        }


def swiglu_cases() -> Iterator[dict[str, Any]]:
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
            "D": D,
            "F": Fh,
            "x": _vals(50 + k, (3, D), dt, 1.0, 0.3),
            "w_gate": _vals(60 + k, (Fh, D), dt, D**-0.5),
            "w_up": _vals(70 + k, (Fh, D), dt, D**-0.5),
            "w_down": _vals(80 + k, (D, Fh), dt, Fh**-0.5),
        }
    D, Fh = 4096, 11008
    yield {
        "id": "llama7b-row-bfloat16",
        "description": "one Llama-7B-shaped row (D=4096, F=11008), weights by recipe",
        "dtype": "bfloat16",
        "D": D,
        "F": Fh,
        "x": ("recipe", 91, (1, D), 1.0),
        "w_gate": ("recipe", 92, (Fh, D), D**-0.5),
        "w_up": ("recipe", 93, (Fh, D), D**-0.5),
        "w_down": ("recipe", 94, (D, Fh), Fh**-0.5),
    }


def block_cases() -> Iterator[dict[str, Any]]:
    from nanolm_core import ModelConfig

    for k, (D, H, G, T, dt) in enumerate(
        ((32, 4, 2, 6, "bfloat16"), (32, 8, 4, 5, "float32"), (24, 6, 3, 7, "float64"))
    ):
        cfg = ModelConfig(dim=D, n_heads=H, n_kv_heads=G, ffn_dim=2 * D, max_seq_len=16)
        K = D // H
        shapes = {
            "attn_norm.weight": (D,),
            "attn.wq.weight": (H * K, D),
            "attn.wk.weight": (G * K, D),
            "attn.wv.weight": (G * K, D),
            "attn.wo.weight": (D, H * K),
            "ffn_norm.weight": (D,),
            "ffn.w_gate.weight": (2 * D, D),
            "ffn.w_up.weight": (2 * D, D),
            "ffn.w_down.weight": (D, 2 * D),
        }
        rec: dict[str, Any] = {
            "id": f"D{D}-H{H}-G{G}-T{T}-{dt}",
            "description": "1 < G < H, T ≥ 5, random norms",
            "dtype": dt,
            "config": {
                "dim": D,
                "n_heads": H,
                "n_kv_heads": G,
                "ffn_dim": 2 * D,
                "max_seq_len": 16,
                "norm_eps": cfg.norm_eps,
                "rope_theta": cfg.rope_theta,
            },
            "x": _vals(500 + k, (1, T, D), dt, 1.0, 0.2),
        }
        for j, (name, shape) in enumerate(shapes.items()):
            rec[name] = (
                _gamma(600 + 10 * k + j, D, dt)
                if "norm" in name
                else _vals(600 + 10 * k + j, shape, dt, shape[-1] ** -0.5)
            )
        yield rec


INPUT_NAMES = {
    "rmsnorm": ("x", "weight"),
    "swiglu": ("x", "w_gate", "w_up", "w_down"),
    "block": ("x", *engine.BLOCK_PARAMS),
}
GENERATORS = {"rmsnorm": rmsnorm_cases, "swiglu": swiglu_cases, "block": block_cases}


# ------------------------------------------------------------------------------------------ writing
def _record(family: str, spec: dict[str, Any]) -> dict[str, Any]:
    dt = spec["dtype"]
    inputs: dict[str, np.ndarray] = {}
    stored: dict[str, Any] = {}
    for name in INPUT_NAMES[family]:
        v = spec[name]
        if isinstance(v, tuple) and v[0] == "recipe":
            _, seed, shape, scale = v
            inputs[name] = corpus.recipe_values(seed, list(shape), dt, scale)
            stored[name] = {"shape": list(shape), "recipe": {"seed": seed, "dtype": dt, "scale": scale}}
        else:
            inputs[name] = np.asarray(v, dtype=np.float64)
            stored[name] = {"shape": list(inputs[name].shape), "hex": corpus.encode_hex(inputs[name])}
    params: dict[str, Any] = {}
    if family == "rmsnorm":
        params["eps"] = float(EPS).hex()
    if family == "block":
        params["config"] = spec["config"]
    case = corpus.Case(
        family,
        spec["id"],
        spec["description"],
        corpus.DTYPE_NAMES[dt],
        inputs,
        {k: (float.fromhex(v) if k == "eps" else v) for k, v in params.items()},
        None,
        {"inputs": stored},
        Path(),
    )  # type: ignore[arg-type]
    small = sum(a.size for a in inputs.values()) < 60_000
    g = corpus.recompute(case, validate="full" if small else "sample", timeout=1800.0)
    decimal = corpus.encode_decimal(g.hi, g.lo)
    stored_g = corpus.decode_decimal(decimal, list(g.hi.shape))
    return {
        "id": spec["id"],
        "description": spec["description"],
        "dtype": dt,
        "params": params,
        "inputs": stored,
        "inputs_sha256": corpus.sha256_arrays(inputs, params),
        "golden": {"shape": list(g.hi.shape), "decimal": decimal},
        "golden_sha256": corpus.sha256_arrays({"hi": stored_g.hi, "lo": stored_g.lo}),  # of the values as read back
        "validation": {
            k: g.info[k]
            for k in ("method", "validated", "sum_bound_rel", "kernel_checks", "full_check_rel")
            if k in g.info
        },
    }


def header() -> dict[str, Any]:
    return {
        "generator": "golden/data/generate.py",
        "generator_version": GENERATOR_VERSION,
        "provenance": {
            "mpmath": mpmath.__version__,
            "numpy": np.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
            "engine_prec_bits": engine.DEFAULT_PREC,
            "validation_prec_bits": engine.DEFAULT_PREC + 64,
            "tol_bits": engine.DEFAULT_TOL_BITS,
            "decimal_digits": corpus.DIGITS,
        },
    }


def generate(data_dir: Path, families: tuple[str, ...] = corpus.FAMILIES, log: Any = print) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    for fam in families:
        records = []
        for spec in GENERATORS[fam]():
            records.append(_record(fam, spec))
            log(f"  {fam}/{spec['id']}: {records[-1]['validation']}")
        corpus.write_family(data_dir / f"{fam}.json", fam, header(), records)
    corpus.write_manifest(data_dir, GENERATOR_VERSION)


if __name__ == "__main__":
    generate(corpus.DATA_DIR)
