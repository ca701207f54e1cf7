"""The findings of docs/league.md about Liger's and fla's Triton kernels, each shown by a small computation of its
own — independent of the laws that found them (plain torch, no golden, no bounds).

    python bench/triton_findings.py          # Triton's interpreter where there is no CUDA device

This script is a process of its own: it sets TRITON_INTERPRET=1 (without CUDA) and installs the interpreter's
bridges (properties.running.interpreted) before Triton is imported, as the suite's workers do. Each finding prints
one line: what was computed, what came out. Exit status 0 (findings are reported, not asserted).
"""

from __future__ import annotations

import os
import sys

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
from properties.running import interpreted

interpreted.prepare()
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def grad_output_overwritten() -> str:
    """LigerRMSNorm (in_place=True, the default): the backward writes dX into the grad_output it is handed."""
    from liger_kernel.transformers import LigerRMSNorm

    norm = LigerRMSNorm(16).to(DEVICE)
    x = torch.randn(4, 16, device=DEVICE, requires_grad=True)
    g = torch.randn(4, 16, device=DEVICE)
    kept = g.clone()
    norm(x).backward(g)
    changed, is_dx = not torch.equal(g, kept), torch.equal(g, x.grad)
    return f"caller's cotangent changed by backward: {changed}; it now equals x.grad: {is_dx}"


def no_fp64_backward() -> str:
    """Liger's norm backward looks the dtype up in torch_to_triton_dtype (fp32, fp16, bf16 only)."""
    from liger_kernel.transformers import LigerRMSNorm

    norm = LigerRMSNorm(16).to(DEVICE, torch.float64)
    x = torch.randn(4, 16, device=DEVICE, dtype=torch.float64, requires_grad=True)
    try:
        norm(x).sum().backward()
    except KeyError as exc:
        return f"fp64 forward runs, fp64 backward raises KeyError: {exc}"
    return "fp64 backward ran"


def swiglu_backward_not_reentrant() -> str:
    """LigerSiLUMulFunction's backward writes d(gate), d(up) into the saved activations: a second backward differs."""
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    a32, b32 = (torch.randn(4, 8, device=DEVICE, requires_grad=True) for _ in range(2))
    out = LigerSiLUMulFunction.apply(a32 * 1, b32 * 1)  # the activations: non-leaf tensors saved for backward
    g = torch.randn_like(out)
    out.backward(g, retain_graph=True)
    first = a32.grad.clone()
    a32.grad = None
    out.backward(g)
    return f"two backward passes through one graph give the same d(gate): {torch.equal(first, a32.grad)}"


def swiglu_fp64_in_fp32() -> str:
    """LigerSiLUMulFunction on fp64: silu(gate) is computed in fp32 inside the kernel."""
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    a = torch.randn(64, 64, device=DEVICE, dtype=torch.float64)
    b = torch.randn(64, 64, device=DEVICE, dtype=torch.float64)
    c = LigerSiLUMulFunction.apply(a, b)
    exact = torch.nn.functional.silu(a) * b
    rel = ((c - exact).abs() / exact.abs().clamp_min(1e-300)).max().item()
    return f"fp64 silu(a)·b: max relative error {rel:.2e} (fp32's unit roundoff 6e-08, fp64's 1e-16)"


def fla_add_norm_backward_twice() -> str:
    """fla's RMSNorm(x, residual, prenorm=True): two backward passes through one graph accumulate 2 × the first?"""
    from fla.modules import RMSNorm

    norm = RMSNorm(48, eps=1e-6).to(DEVICE)
    x, r = (torch.randn(6, 48, device=DEVICE, requires_grad=True) for _ in range(2))
    gy, gh = torch.randn(6, 48, device=DEVICE), torch.randn(6, 48, device=DEVICE)
    kept = gy.clone(), gh.clone()
    y, h = norm(x, residual=r, prenorm=True)
    torch.autograd.backward((y, h), (gy, gh), retain_graph=True)
    first, shared = x.grad.clone(), x.grad.data_ptr() == r.grad.data_ptr()
    changed = [name for name, g, k in (("grad_y", gy, kept[0]), ("grad_h", gh, kept[1])) if not torch.equal(g, k)]
    torch.autograd.backward((y, h), (gy, gh))
    ratio = (x.grad / first).median().item()
    return (
        f"x.grad and residual.grad share storage after one pass: {shared}; x.grad after two passes / after one: "
        f"{ratio:.3f} (2 expected); cotangents changed by backward: {changed}"
    )


def fla_swiglu_fp64_in_fp32() -> str:
    """fla's fused swiglu on fp64: silu(gate)·up computed in fp32 inside the kernel."""
    from fla.modules.activations import swiglu

    a, b = (torch.randn(64, 64, device=DEVICE, dtype=torch.float64) for _ in range(2))
    rel = ((swiglu(a, b) - torch.nn.functional.silu(a) * b).abs() / (torch.nn.functional.silu(a) * b).abs()).max()
    return f"fp64 swiglu(a, b): max relative error {rel.item():.2e} (fp32's unit roundoff 6e-08)"


def fla_rows_of_64kb() -> str:
    """fla's norm refuses rows wider than 64 KB: fp64 beyond D = 8192 (fp32 beyond 16384, bf16 beyond 32768)."""
    from fla.modules import RMSNorm

    out = []
    for dtype, d in ((torch.float64, 16384), (torch.float32, 16384), (torch.float64, 8192)):
        try:
            RMSNorm(d).to(DEVICE, dtype)(torch.zeros(1, d, device=DEVICE, dtype=dtype))
            out.append(f"{dtype} D={d}: runs")
        except RuntimeError as exc:
            out.append(f"{dtype} D={d}: {exc}")
    return "; ".join(out)


def fla_fp64_backward_past_512() -> str:
    """fla's norm backward in fp64 past D = 512: its row kernel casts dx with fp_downcast_rounding='rtne', which
    Triton's front end (the compiler's and the interpreter's) refuses for the widening fp32 → fp64 cast."""
    from fla.modules import RMSNorm

    out = []
    for d in (512, 513):
        x = torch.ones(2, d, device=DEVICE, dtype=torch.float64, requires_grad=True)
        try:
            RMSNorm(d).to(DEVICE, torch.float64)(x).sum().backward()
            out.append(f"fp64 D={d}: backward runs")
        except Exception as exc:  # triton's InterpreterError / CompilationError around semantic.cast's ValueError
            out.append(f"fp64 D={d}: {type(exc).__name__}: {str(exc).splitlines()[-1][:120]}")
    return "; ".join(out)


def main() -> int:
    print(f"kernels: {'compiled on ' + DEVICE if DEVICE == 'cuda' else 'interpreted (TRITON_INTERPRET=1)'}")
    findings = (grad_output_overwritten, no_fp64_backward, swiglu_backward_not_reentrant, swiglu_fp64_in_fp32,
                fla_add_norm_backward_twice, fla_swiglu_fp64_in_fp32, fla_rows_of_64kb,
                fla_fp64_backward_past_512)  # fmt: skip
    for finding in findings:
        print(f"- {finding.__name__}: {finding()}  [{finding.__doc__.splitlines()[0]}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
