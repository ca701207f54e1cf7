"""Code-path sizes: what every component's enumerated cases at the sizes where a kernel switches code path share
(``PathCase``, ``path_values``; the cases themselves are each component's, in its own strategies module, named by
its record's ``paths``: read by the family of laws/paths.py), judged on ``sampled_rows``."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import torch

# Sizes where a kernel switches code path (laws/paths.py): launch grids limited to 65,535 programs along an axis
# (CUDA's gridDim.y and .z), several rows per program for narrow rows, a tail block past a power of two, several
# attention programs per (batch, head). Each case is enumerated (no drawing: the sizes are the point), seeded, and
# judged on a sample of its rows (``sampled_rows``): the oracle is per row, so a few dozen rows cost what a
# drawn case costs, whatever the row count.
GRID_LIMIT = 65_535


class PathCase(NamedTuple):
    """One code-path size: its name, the inputs of one forward call (in the record's ``inputs`` order), the
    parameters (the contract's state-dict names) and the constructor's options (eps, config …): what
    ``Component.case`` makes the component's Case of."""

    name: str
    inputs: tuple[torch.Tensor, ...]
    params: dict[str, torch.Tensor]
    options: Mapping[str, Any] = MappingProxyType({})

    @property
    def x(self) -> torch.Tensor:
        """The first input (…, D): its rows are what the size counts."""
        return self.inputs[0]

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


def path_values(shape: tuple[int, ...], dtype: torch.dtype, seed: int, mean: float = 0.5) -> torch.Tensor:
    """N(mean, 1) values of ``shape``, exact in ``dtype`` (generated once per process for every dtype)."""
    return torch.tensor(_normal(shape, seed, mean), dtype=torch.float64).to(dtype)
