"""Input validation shared by the core modules: every message names the argument and its value.

Rules (one per helper; ``who`` is the class whose constructor or forward was called):

- ``check_size``: a size is an integral number (``int`` or any ``numbers.Integral`` such as ``numpy.int64``;
  not ``bool``, not a float even if whole, not a tensor) in 1 … MAX_SIZE; returned as a Python ``int``.
- ``check_eps``: finite real ≥ 0 (``int``, ``float`` or any ``numbers.Real``; not ``bool``); returned as ``float``.
- ``check_positive``: finite real > 0, same types; returned as ``float``.
- ``check_bool``: exactly ``True`` or ``False``.
- ``check_features`` / ``check_sequence`` / ``check_tokens``: a forward's tensor by dtype, rank, shape and
  device — attributes only, never a pass over the data, except the token ids' min/max;
- ``check_same``: a second input of a forward (AddRMSNorm's residual) has the first one's shape and dtype.

MAX_SIZE = 2**24 = 16,777,216 is the largest n such that every integer 0 … n is exact in fp32, the reference's
compute precision: positions t < T (RoPE) and the divisor D of a mean stay exact. It is far above every
published model (widths ≲ 2·10⁴, FFN widths ≲ 10⁵, vocabularies ≲ 3·10⁵, contexts ≲ 10⁷), and it stops
``dim=2**62`` before an allocation. Memory is not checked: a valid size can still exceed a device (build
on ``torch.device("meta")`` to allocate nothing).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch

FLOAT_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
TOKEN_DTYPES = (torch.int64, torch.int32)
MAX_SIZE = 2**24


def shown(name: str, value: Any) -> str:
    """``name=repr(value)``, the repr cut to 60 characters (a long list or tensor stays readable)."""
    text = repr(value)
    return f"{name}={text if len(text) <= 60 else text[:57] + '...'}"


def type_name(cls: type) -> str:
    """``float`` for a builtin, ``module.Qualname`` otherwise (a look-alike ModelConfig is told apart)."""
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def typed(name: str, value: Any) -> str:
    """``name=repr(value) (type)``, for a TypeError."""
    return f"{shown(name, value)} ({type_name(type(value))})"


def check_size(value: Any, name: str, who: str) -> int:
    """A size: integral (not bool) and 1 ≤ value ≤ MAX_SIZE; returned as int."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{who}: {typed(name, value)} must be an int (a numbers.Integral other than bool)")
    if not 1 <= value <= MAX_SIZE:
        raise ValueError(f"{who}: {shown(name, value)} must be a positive int ≤ 2**24 = {MAX_SIZE}")
    return int(value)


def _real(value: Any, name: str, who: str) -> float:
    """A finite real number (not bool) as float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{who}: {typed(name, value)} must be a real number (int or float, not bool)")
    try:
        out = float(value)
    except OverflowError:  # an int beyond the float range
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"{who}: {shown(name, value)} must be finite")
    return out


def check_eps(value: Any, name: str, who: str) -> float:
    """A finite real ≥ 0 (eps = 0 is allowed: an all-zero row then gives 0·∞ = NaN, as the formula says)."""
    out = _real(value, name, who)
    if not out >= 0:
        raise ValueError(f"{who}: {shown(name, value)} must be finite and ≥ 0")
    return out


def check_positive(value: Any, name: str, who: str) -> float:
    """A finite real > 0."""
    out = _real(value, name, who)
    if not out > 0:
        raise ValueError(f"{who}: {shown(name, value)} must be finite and > 0")
    return out


def check_bool(value: Any, name: str, who: str) -> bool:
    """Exactly True or False (not 0/1, not numpy.bool_)."""
    if not isinstance(value, bool):
        raise TypeError(f"{who}: {typed(name, value)} must be a bool")
    return value


def check_instance(value: Any, cls: type, name: str, who: str) -> None:
    """value is an instance of cls (subclasses included)."""
    if not isinstance(value, cls):
        raise TypeError(f"{who}: {typed(name, value)} must be a {type_name(cls)}")


def check_module_class(value: Any, name: str, who: str) -> None:
    """value is a class derived from torch.nn.Module (not an instance, not a factory function)."""
    if not (isinstance(value, type) and issubclass(value, torch.nn.Module)):
        raise TypeError(f"{who}: {typed(name, value)} must be a subclass of torch.nn.Module")


def _tensor(x: Any, name: str, who: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{who}: expected a torch.Tensor, got {type_name(type(x))} for {name}")


def _same_device(x: torch.Tensor, name: str, who: str, weight: torch.Tensor | None) -> None:
    if weight is not None and weight.device != x.device:
        raise ValueError(
            f"{who}: input is on {x.device} but the weights are on {weight.device}; move {name} with .to()"
        )


def check_features(
    x: Any, dim: int, who: str, weight: torch.Tensor | None = None, same_dtype: bool = False, name: str = "x"
) -> None:
    """x (called ``name`` in messages) must be a floating tensor of shape (..., dim) on ``weight``'s device (and
    dtype, if asked)."""
    _tensor(x, name, who)
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"{who}: dtype {x.dtype} is not supported for {name}; use float64, float32, float16 or bfloat16"
        )
    if x.dim() == 0 or x.shape[-1] != dim:
        got = f"{name}.shape[-1]={x.shape[-1]}" if x.dim() else f"a 0-dimensional {name}"
        raise ValueError(f"{who}: last dimension of input shape {tuple(x.shape)} must be dim={dim}, got {got}")
    _same_device(x, name, who, weight)
    if same_dtype and weight is not None and weight.dtype != x.dtype:
        raise TypeError(
            f"{who}: input dtype {x.dtype} differs from the weights' {weight.dtype}; "
            f"use module.to({x.dtype}) or x.to({weight.dtype})"
        )


def check_same(other: Any, x: torch.Tensor, name: str, who: str) -> None:
    """A second input ``name`` of a forward must be a tensor of x's shape, dtype and device (no broadcasting)."""
    _tensor(other, name, who)
    if other.shape != x.shape:
        raise ValueError(f"{who}: {name} has shape {tuple(other.shape)}, x has {tuple(x.shape)}; they must be equal")
    if other.dtype != x.dtype:
        raise TypeError(f"{who}: {name} has dtype {other.dtype}, x has {x.dtype}; they must be equal")
    if other.device != x.device:
        raise ValueError(f"{who}: {name} is on {other.device}, x is on {x.device}; move {name} with .to()")


def upcast_dtype(dtype: torch.dtype) -> torch.dtype:
    """Compute precision of the reference — the contract's numerics policy: fp64 stays fp64, everything else is
    computed in fp32. The one default of the suite's compute dtype: ``properties.numerics.bounds.compute_dtype``
    is this unless an implementation declares another (``CONVENTIONS[...]["compute_dtype"]``)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def check_sequence(x: Any, dim: int, max_seq_len: int, who: str, weight: torch.Tensor) -> None:
    """x must be (B, T, dim) with T ≤ max_seq_len, floating, on ``weight``'s device and dtype."""
    check_features(x, dim, who, weight, same_dtype=True)
    if x.dim() != 3:
        raise ValueError(f"{who}: input must have rank 3 (B, T, D), got x of shape {tuple(x.shape)}")
    if x.shape[1] > max_seq_len:
        raise ValueError(f"{who}: sequence length T={x.shape[1]} exceeds max_seq_len={max_seq_len} (x.shape[1])")


def check_tokens(tokens: Any, vocab_size: int, max_seq_len: int, who: str, weight: torch.Tensor) -> None:
    """tokens must be an int64/int32 tensor (B, T), T ≤ max_seq_len, on ``weight``'s device, ids in [0, V).

    The one check that reads data: a min/max over the ids (B·T integers, no copy); the position of a bad
    id is looked up only after the check has failed. Skipped on the meta device, which holds no values.
    """
    _tensor(tokens, "tokens", who)
    if tokens.dtype not in TOKEN_DTYPES:
        raise TypeError(f"{who}: dtype {tokens.dtype} is not supported for tokens; use torch.int64 or torch.int32")
    if tokens.dim() != 2:
        raise ValueError(f"{who}: tokens must have rank 2 (B, T), got shape {tuple(tokens.shape)}")
    if tokens.shape[1] > max_seq_len:
        raise ValueError(
            f"{who}: sequence length T={tokens.shape[1]} exceeds max_seq_len={max_seq_len} (tokens.shape[1])"
        )
    _same_device(tokens, "tokens", who, weight)
    if tokens.numel() == 0 or tokens.is_meta:
        return
    low, high = (int(v) for v in torch.aminmax(tokens))  # one pass; on a GPU the first int() waits for it
    if low < 0 or high >= vocab_size:
        bad = ((tokens < 0) | (tokens >= vocab_size)).nonzero()[0].tolist()
        index = ", ".join(map(str, bad))
        raise ValueError(
            f"{who}: tokens[{index}]={tokens[tuple(bad)].item()} is out of range [0, vocab_size={vocab_size})"
        )
