"""Run by tests/adapters/test_triton_interpreter.py in a process of its own (``python -m``), as a worker would be:
TRITON_INTERPRET=1 set before Triton is imported, then the bridges installed by ``interpreted.prepare``. Each check
runs a small kernel and prints its raw results as JSON; the test compares them with numpy in its own process."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

os.environ["TRITON_INTERPRET"] = "1"
import triton
import triton.language as tl
from triton.language.extra.libdevice import rsqrt as early_rsqrt

from properties.running import interpreted

interpreted.prepare()

import torch  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

FUNCTIONS = ("rsqrt", "sqrt", "exp", "exp2", "log", "log2", "tanh", "erf", "sin", "cos")


@triton.jit
def scalar_kernel(X, Y, eps, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    tl.store(Y + offs, x + eps.to(tl.float32), mask=offs < n)


@triton.jit
def early_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, early_rsqrt(tl.load(X + offs, mask=offs < n, other=1.0)), mask=offs < n)


@triton.jit
def unary_kernel(X, Y, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=1.0)
    if FN == "rsqrt":
        y = libdevice.rsqrt(x)
    elif FN == "sqrt":
        y = libdevice.sqrt(x)
    elif FN == "exp":
        y = libdevice.exp(x)
    elif FN == "exp2":
        y = libdevice.exp2(x)
    elif FN == "log":
        y = libdevice.log(x)
    elif FN == "log2":
        y = libdevice.log2(x)
    elif FN == "tanh":
        y = libdevice.tanh(x)
    elif FN == "erf":
        y = libdevice.erf(x)
    elif FN == "sin":
        y = libdevice.sin(x)
    elif FN == "cos":
        y = libdevice.cos(x)
    else:
        y = libdevice.j0(x)  # no bridge: must raise naming the symbol
    tl.store(Y + offs, y, mask=offs < n)


@triton.jit
def bf16_kernel(A, B, SUM, CAST, CAST64, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(A + offs, mask=offs < n)  # bf16
    b = tl.load(B + offs, mask=offs < n)
    tl.store(SUM + offs, a + b, mask=offs < n)  # bf16 arithmetic
    wide = a.to(tl.float32) * 1.01171875  # fp32 values between bf16 neighbours, ties included
    tl.store(CAST + offs, wide.to(tl.bfloat16), mask=offs < n)
    tl.store(CAST64 + offs, wide.to(tl.float64).to(tl.bfloat16), mask=offs < n)


@triton.autotune(configs=[triton.Config({"TAG": 1}), triton.Config({"TAG": 2})], key=["n"])
@triton.jit
def tuned_kernel(Y, n, TAG: tl.constexpr):
    tl.store(Y + tl.program_id(0), TAG)


def inputs(name: str, dtype: torch.dtype) -> torch.Tensor:
    lo, hi = {"rsqrt": (1e-3, 1e3), "sqrt": (0, 1e3), "log": (1e-3, 1e3), "log2": (1e-3, 1e3)}.get(name, (-8, 8))
    return torch.linspace(lo, hi, 1000, dtype=dtype)


def main() -> None:
    out: dict[str, object] = {}
    x = torch.zeros(5, dtype=torch.float32)
    y = torch.empty_like(x)
    scalar_kernel[(1,)](x, y, 0.1, 5, BLOCK=8)
    out["scalar"] = y.tolist()
    for dtype in (torch.float32, torch.float64):
        for name in FUNCTIONS:
            xs = inputs(name, dtype)
            ys = torch.empty_like(xs)
            unary_kernel[(1,)](xs, ys, xs.numel(), FN=name, BLOCK=1024)
            out[f"{name}-{dtype}"] = [xs.tolist(), ys.tolist()]
    xs = inputs("rsqrt", torch.float32)
    ys = torch.empty_like(xs)
    early_kernel[(1,)](xs, ys, xs.numel(), BLOCK=1024)
    out["early"] = [xs.tolist(), ys.tolist()]
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(1000, generator=gen).to(torch.bfloat16) for _ in range(2))
    outs = [torch.empty_like(a) for _ in range(3)]
    bf16_kernel[(1,)](a, b, *outs, a.numel(), BLOCK=1024)
    out["bf16"] = [t.float().tolist() for t in (a, b, *outs)]
    tags = torch.zeros(1, dtype=torch.int32)
    tuned_kernel[(1,)](tags, 1)
    out["autotune"] = tags.tolist()
    try:
        unary_kernel[(1,)](xs, ys, xs.numel(), FN="j0", BLOCK=1024)
        out["unknown"] = "no error"
    except Exception as exc:  # the interpreter wraps the bridge's NotImplementedError
        out["unknown"] = f"{type(exc).__name__}: {exc}"
    out["float32_of_0.1"] = float(np.float32(0.1))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
