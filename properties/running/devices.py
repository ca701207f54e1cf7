"""Devices: any device string torch knows (``cpu``, ``cuda``, ``cuda:1``, ``mps``, ``xpu``, ``privateuseone``),
which of them this machine has, and which dtypes each supports (probed once per process).

``--device`` takes one of these, a comma-separated list, ``auto`` (the CPU and every accelerator present) or
``all`` (the CPU and CUDA, whether present or not: absent ones are skipped with the reason).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import torch

from golden.formats import fmt

__all__ = ["accelerators", "dtype_problem", "problem", "resolve"]


def accelerators() -> list[str]:
    """The accelerators present: every CUDA device, MPS, XPU."""
    found = []
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
        found += ["cuda"] + [f"cuda:{i}" for i in range(1, n)]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        found.append("xpu")
    return found


def resolve(value: str | Iterable[str] | None) -> list[str]:
    """Device strings from ``--device`` (ValueError for a string torch does not parse)."""
    if value is None:
        value = "auto"
    items = value.split(",") if isinstance(value, str) else [v for item in value for v in item.split(",")]
    out: list[str] = []
    for item in (i.strip() for i in items):
        if item == "auto":
            chosen = ["cpu", *accelerators()]
        elif item == "all":
            chosen = ["cpu", *dict.fromkeys(["cuda", *accelerators()])]
        else:
            try:
                torch.device(item)
            except (RuntimeError, ValueError):
                raise ValueError(f"{item!r} is not a torch device type") from None
            chosen = [item]
        out += [d for d in chosen if d not in out]
    return out


@functools.cache
def problem(device: str) -> str | None:
    """Why laws cannot run on ``device`` here (None: they can)."""
    if device == "cpu":
        return None
    try:
        (torch.ones(2, device=device) + 1).cpu()
    except Exception as exc:  # any backend error means the same: not usable here
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
        return f"{device} is not available on this machine ({first})"
    return None


@functools.cache
def dtype_problem(device: str, dtype: torch.dtype) -> str | None:
    """Why ``device`` cannot compute in ``dtype`` (None: it can): probed with the operations the contract needs."""
    if problem(device) is not None:
        return problem(device)
    try:
        a = torch.ones(4, 4, dtype=dtype, device=device)
        (torch.rsqrt((a @ a).float().mean(-1)) * torch.nn.functional.silu(a).float().sum()).cpu()
    except Exception as exc:
        return f"{device} does not support {fmt(dtype).name} ({type(exc).__name__})"
    return None
