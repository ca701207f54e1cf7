"""bench/fp32_floor.py's Σ_ν S_ν² — the squared partial sums of each emulated order, which set the declared-family
bound it measures — against closed forms on a row of ones (every partial sum a count of terms)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.common.bench import script

N = 64
ONES = np.ones((1, N))
SEQUENTIAL = sum(k * k for k in range(2, N + 1))  # P_2 … P_N = 2 … N


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("sequential", SEQUENTIAL),
        ("reversed", SEQUENTIAL),
        ("pairwise", sum((N >> level) * (1 << level) ** 2 for level in range(1, 7))),  # 32 twos, 16 fours, … one 64
        # 8 lanes of 8: each sums 2 … 8 sequentially; then a tree over the 8 lane sums (4 × 16, 2 × 32, 1 × 64)
        ("lanes8", 8 * sum(k * k for k in range(2, 9)) + 4 * 16**2 + 2 * 32**2 + 64**2),
        # split-K in 4 runs of 16: each 2 … 16 sequentially, then the run sums added: 32, 48, 64
        ("splitk4", 4 * sum(k * k for k in range(2, 17)) + 32**2 + 48**2 + 64**2),
    ],
)
def test_the_squared_partial_sums_of_each_order(order: str, expected: int) -> None:
    assert script("fp32_floor").nodes(ONES, order)[0] == expected


def test_padding_to_a_block_adds_no_rounding() -> None:
    """blocked384 over 64 terms is one run, then that run's sum: zeros added to pad the run round nothing."""
    assert script("fp32_floor").nodes(ONES, "blocked384")[0] == SEQUENTIAL
