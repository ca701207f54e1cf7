"""Code-path sizes: enumerated cases at the sizes where a kernel switches code path (``PATHS``, per component;
read by laws/paths.py), judged on ``sampled_rows``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

from nanolm_core.config import ModelConfig
from properties.library.strategies.block import block_params, fixed_config
from properties.library.strategies.values import linear_weight

# Sizes where a kernel switches code path (laws/paths.py): launch grids limited to 65,535 programs along an axis
# (CUDA's gridDim.y and .z), several rows per program for narrow rows, a tail block past a power of two, several
# attention programs per (batch, head). Each case is enumerated (no drawing: the sizes are the point), seeded, and
# judged on a sample of its rows (``sampled_rows``): the oracle is per row, so a few dozen rows cost what a
# drawn case costs, whatever the row count.
GRID_LIMIT = 65_535


class PathCase(NamedTuple):
    """One code-path size: its name, x (…, D) and the component's weights (a state dict; RMSNorm's eps in ``eps``)."""

    name: str
    x: torch.Tensor
    params: dict[str, torch.Tensor]
    eps: float = 1e-6
    config: ModelConfig | None = None

    def describe(self) -> dict[str, object]:
        return {"case": self.name, "shape": tuple(self.x.shape), "D": self.x.shape[-1]}


def sampled_rows(n: int, seed: int, extra: int = 8) -> np.ndarray:
    """Row indices of n rows to judge: the first and last, both sides of every power-of-two boundary below n (where
    a grid, a block of rows or an index type ends), and ``extra`` random ones — ascending, unique."""
    edges = [r for k in range(max(1, n).bit_length()) for r in (2**k - 1, 2**k)]
    rng = np.random.default_rng(seed)
    picks = [0, n - 1, *edges, *rng.integers(0, n, extra).tolist()]
    return np.unique([r for r in picks if 0 <= r < n])


@functools.lru_cache(maxsize=8)
def _normal(shape: tuple[int, ...], seed: int, mean: float) -> np.ndarray:
    values = np.random.default_rng(seed).standard_normal(shape) + mean
    values.flags.writeable = False  # shared by the dtypes of one process: never modified
    return values


def _values(shape: tuple[int, ...], dtype: torch.dtype, seed: int, mean: float = 0.5) -> torch.Tensor:
    """N(mean, 1) values of ``shape``, exact in ``dtype`` (generated once per process for every dtype)."""
    return torch.tensor(_normal(shape, seed, mean), dtype=torch.float64).to(dtype)


def _path_rmsnorm(name: str, N: int, D: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        rng = np.random.default_rng(N + D)
        w = torch.from_numpy(rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)).to(dtype)
        return PathCase(name, _values((N, D), dtype, N * D), {"weight": w})

    return build


def _path_swiglu(name: str, N: int, D: int, F: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        w = [linear_weight(o, i, dtype, N + k) for k, (o, i) in enumerate(((F, D), (F, D), (D, F)))]
        x = _values((N, D), dtype, N * D, mean=0.25)
        return PathCase(name, x, dict(zip(("w_gate.weight", "w_up.weight", "w_down.weight"), w, strict=True)))

    return build


def _path_block(name: str, B: int, T: int, H: int, K: int, F: int) -> Callable[[torch.dtype], PathCase]:
    def build(dtype: torch.dtype) -> PathCase:
        config = fixed_config(H=H, G=1, K=K, F=F, max_seq_len=max(16, T))
        x = _values((B, T, config.dim), dtype, B * T, mean=0.25)
        return PathCase(name, x, block_params(config, dtype, seed=B + T, logit_scale=2.0), config=config)

    return build


PATHS: dict[str, dict[str, Callable[[torch.dtype], PathCase]]] = {
    "RMSNorm": {
        "2^16 + 1 rows, D = 8": _path_rmsnorm("2^16 + 1 rows, D = 8 (past a 65,535-program grid)", 2**16 + 1, 8),
        "2^17 + 3 rows, D = 4": _path_rmsnorm("2^17 + 3 rows, D = 4 (past 65,535 programs of 2 rows)", 2**17 + 3, 4),
        "4,099 rows, D = 64": _path_rmsnorm("4,099 rows, D = 64 (several narrow rows per program)", 4099, 64),
        "4,099 rows, D = 256": _path_rmsnorm("4,099 rows, D = 256 (several rows per program)", 4099, 256),
        "D = 2^9 + 1": _path_rmsnorm("5 rows, D = 513 = 2^9 + 1 (a one-element tail block)", 5, 513),
        "D = 2^12 + 1": _path_rmsnorm("5 rows, D = 4097 = 2^12 + 1 (a one-element tail block)", 5, 4097),
        "D = 3·2^9": _path_rmsnorm("5 rows, D = 1536 = 3·2^9 (not a power of two)", 5, 1536),
        "D = 2^11 − 1": _path_rmsnorm("5 rows, D = 2047 = 2^11 − 1 (one short of a power of two)", 5, 2047),
    },
    "SwiGLU": {
        "2^16 + 1 tokens": _path_swiglu("2^16 + 1 tokens, D = F = 4 (past a 65,535-program grid)", 2**16 + 1, 4, 4),
        "2^17 + 3 tokens": _path_swiglu(
            "2^17 + 3 tokens, D = 2, F = 4 (past 65,535 programs of 2 rows)", 2**17 + 3, 2, 4
        ),
        "4,099 tokens": _path_swiglu("4,099 tokens, D = 32, F = 86 (many narrow rows)", 4099, 32, 86),
        "D, F = 2^k + 1": _path_swiglu("3 tokens, D = 129, F = 257 (2^k + 1: one-element tail blocks)", 3, 129, 257),
    },
    "Block": {
        "B·H past 2^16": _path_block(
            "B = 32,769, H = 2: 65,538 (batch, head) programs, 65,538 rows", 32769, 2, 2, 4, 8
        ),
        "K, F = 2^k + 2, 2^k + 1": _path_block("B = 3, T = 5, K = 34 = 2^5 + 2, F = 65 = 2^6 + 1", 3, 5, 2, 34, 65),
        "B·H = 4,098": _path_block(
            "B = 2,049, H = 2: 4,098 (batch, head) programs (the step before 2^16)", 2049, 2, 2, 4, 8
        ),
    },
}


def _path_add_rmsnorm(name: str, N: int, D: int) -> Callable[[torch.dtype], PathCase]:
    """A stream of N rows of width D and a branch of a quarter of its size; the residual travels in ``params``."""

    def build(dtype: torch.dtype) -> PathCase:
        rng = np.random.default_rng(N + D + 1)
        w = torch.from_numpy(rng.uniform(0.5, 1.5, D) * rng.choice((-1.0, 1.0), D)).to(dtype)
        r = _values((N, D), dtype, N * D)
        x = (torch.from_numpy(np.random.default_rng(N * D + 1).standard_normal((N, D))) / 4).to(dtype)
        return PathCase(name, x, {"weight": w, "residual": r})

    return build


PATHS["AddRMSNorm"] = {
    "2^16 + 1 rows, D = 8": _path_add_rmsnorm("2^16 + 1 rows, D = 8 (past a 65,535-program grid)", 2**16 + 1, 8),
    "4,099 rows, D = 64": _path_add_rmsnorm("4,099 rows, D = 64 (several narrow rows per program)", 4099, 64),
    "D = 2^12 + 1": _path_add_rmsnorm("5 rows, D = 4097 = 2^12 + 1 (a one-element tail block)", 5, 4097),
}
