"""The floating-point formats of the suite: one table of every dtype fact, imported by every module.

A binary format has precision p (significand bits with the hidden one), minimum normal exponent e_min and
maximum exponent e_max. From these: unit roundoff u = 2^-p, smallest normal 2^e_min, smallest subnormal
2^(e_min − p + 1), largest finite value (2 − 2^(1−p))·2^e_max, and the integer type of the same width
(to compare bit patterns). The table lives in ``golden`` because correct rounding needs it and ``golden``
imports nothing from ``properties``; ``properties`` imports it from here.

    >>> fmt("bf16").u == 2.0**-8 and fmt(torch.float16).smallest_subnormal == 2.0**-24
    True
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

__all__ = ["FORMATS", "NAMES", "Format", "fmt", "torch_dtype"]


@dataclasses.dataclass(frozen=True)
class Format:
    """One IEEE-style binary format (fp64, fp32, fp16, bf16) and its facts."""

    name: str  # short name used in tables, ids and messages: fp64, fp32, fp16, bf16
    long_name: str  # torch's name: float64, float32, float16, bfloat16
    dtype: torch.dtype
    p: int  # precision: significand bits including the hidden bit
    emin: int  # exponent of the smallest normal
    emax: int  # exponent of the largest finite value
    int_view: torch.dtype  # integer type of the same width (bit patterns)

    @property
    def u(self) -> float:
        """Unit roundoff 2^-p: the largest relative error of round-to-nearest in the normal range."""
        return math.ldexp(1.0, -self.p)

    @property
    def mantissa_bits(self) -> int:
        """Stored fraction bits: p − 1."""
        return self.p - 1

    @property
    def smallest_normal(self) -> float:
        return math.ldexp(1.0, self.emin)

    @property
    def smallest_subnormal(self) -> float:
        """2^(e_min − p + 1): the spacing of the format below the normal range (its absolute rounding quantum)."""
        return math.ldexp(1.0, self.emin - self.p + 1)

    @property
    def max(self) -> float:
        """The largest finite value (2 − 2^(1−p))·2^e_max."""
        return math.ldexp(2.0 - math.ldexp(1.0, 1 - self.p), self.emax)

    @property
    def overflow_threshold(self) -> float:
        """max + ulp(max)/2: the smallest magnitude that rounds to ±inf (RNE); inf for fp64 (not representable)."""
        return self.max + math.ldexp(1.0, self.emax - self.p) if self.p < 53 else math.inf

    def __str__(self) -> str:
        return self.name


FORMATS: tuple[Format, ...] = (
    Format("fp64", "float64", torch.float64, 53, -1022, 1023, torch.int64),
    Format("fp32", "float32", torch.float32, 24, -126, 127, torch.int32),
    Format("fp16", "float16", torch.float16, 11, -14, 15, torch.int16),
    Format("bf16", "bfloat16", torch.bfloat16, 8, -126, 127, torch.int16),
)
NAMES: tuple[str, ...] = tuple(f.name for f in FORMATS)  # report order: fp64, fp32, fp16, bf16

_BY_DTYPE = {f.dtype: f for f in FORMATS}
_BY_NAME = {f.name: f for f in FORMATS} | {f.long_name: f for f in FORMATS}
_BY_NAME |= {"double": _BY_NAME["fp64"], "float": _BY_NAME["fp32"], "half": _BY_NAME["fp16"]}
_BY_NUMPY = {np.dtype(np.float64): _BY_NAME["fp64"], np.dtype(np.float32): _BY_NAME["fp32"]}
_BY_NUMPY[np.dtype(np.float16)] = _BY_NAME["fp16"]


def fmt(dtype: Any) -> Format:
    """The Format of a torch dtype, a name (``bf16``, ``bfloat16``, ``torch.bfloat16``), a numpy dtype or a Format.

    ValueError naming the value and the accepted names otherwise.
    """
    if isinstance(dtype, Format):
        return dtype
    if isinstance(dtype, torch.dtype):
        if dtype in _BY_DTYPE:
            return _BY_DTYPE[dtype]
    elif isinstance(dtype, str):
        key = dtype.strip().lower().removeprefix("torch.")
        if key in _BY_NAME:
            return _BY_NAME[key]
    else:
        try:
            return _BY_NUMPY[np.dtype(dtype)]
        except (KeyError, TypeError):
            pass
    raise ValueError(f"unsupported dtype {dtype!r}; expected one of {', '.join(NAMES)}")


def torch_dtype(dtype: Any) -> torch.dtype:
    """Shortcut: ``fmt(dtype).dtype``."""
    return fmt(dtype).dtype
