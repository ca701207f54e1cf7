"""Drop-in assertions for your own kernel tests, called as ``torch.testing.assert_close`` is called.

    from properties.testing import assert_rmsnorm_close

    def test_my_kernel():
        x, w = torch.randn(8, 4096, dtype=torch.bfloat16), torch.rand(4096, dtype=torch.bfloat16) + 0.5
        assert_rmsnorm_close(my_rms_norm(x, w, 1e-6), x, w, eps=1e-6)

Given the inputs, the weights and the output of *your* call, each assertion computes the golden value (``golden``:
exact / ≥ 100-bit evaluation of the exact float inputs) and the derived bound (``properties.numerics.bounds``: a
formula in the unit roundoffs and the shape that admits every accepted convention), and fails exactly as the laws
do (``properties.library.assertions.assert_matches_golden``): max ULP error against the bound and its formula, the
worst element (golden, actual, allowed), the regime, and a line that reruns the test. The output must also keep
the input's shape, dtype and device. Each returns the max ULP error (for reporting, e.g. in a benchmark).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

import torch

import golden
from properties.library import context
from properties.library.assertions import assert_matches_golden, assert_output_contract
from properties.numerics import bounds

__all__ = ["assert_block_close", "assert_rmsnorm_close", "assert_swiglu_close"]


def _repro() -> str:
    """The pytest command that reruns the calling test (from $PYTEST_CURRENT_TEST), else a hint."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    node = current.rsplit(" (", 1)[0]
    return f"pytest {shlex.quote(node)}" if node else "rerun the calling test"


def _check(component: str, actual: torch.Tensor, x: torch.Tensor, g: Any, b: Any, what: str, **regime: Any) -> float:
    __tracebackhide__ = True
    dtype = x.dtype
    ctx = context.LawContext(f"{component}.{what}", component, dtype, x.device.type, "-", False, None, _repro())
    with context.open_context(ctx):
        context.describe(shape=list(x.shape), D=x.shape[-1], **regime)
        assert_output_contract(actual, shape=tuple(x.shape), dtype=dtype, device=x.device, what=f"{component} output")
        return assert_matches_golden(actual, g, b, what=what)


def assert_rmsnorm_close(
    actual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, *, what: str = "y"
) -> float:
    """``actual`` = RMSNorm(x; weight, eps) = x / √(mean(x², −1) + eps) ⊙ weight within the derived bound."""
    __tracebackhide__ = True
    g = golden.rmsnorm(x, weight, eps)
    return _check("RMSNorm", actual, x, g, bounds.rmsnorm(x, weight, eps, x.dtype), what, eps=eps)


def assert_swiglu_close(
    actual: torch.Tensor,
    x: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    *,
    what: str = "y",
) -> float:
    """``actual`` = W_down (silu(W_gate x) ⊙ W_up x) within the derived bound (``nn.Linear`` layouts: W_gate, W_up
    (F, D), W_down (D, F))."""
    __tracebackhide__ = True
    g = golden.swiglu(x, w_gate, w_up, w_down)
    b = bounds.swiglu(x, w_gate, w_up, w_down, x.dtype)
    return _check("SwiGLU", actual, x, g, b, what, F=w_gate.shape[0])


def assert_block_close(
    actual: torch.Tensor,
    x: torch.Tensor,
    params: Mapping[str, torch.Tensor] | torch.nn.Module,
    config: Any,
    *,
    what: str = "out",
) -> float:
    """``actual`` = the contract's pre-norm Block(x) (causal GQA, rotate-half RoPE, SwiGLU) within the derived
    bound; ``params``: the contract's state-dict names (or a module whose ``state_dict()`` has them), ``config``: a
    ``nanolm_core.ModelConfig``."""
    __tracebackhide__ = True
    state = params.state_dict() if isinstance(params, torch.nn.Module) else dict(params)
    g = golden.block(x, state, config)
    b = bounds.block(x, state, config, x.dtype)
    return _check("Block", actual, x, g, b, what, config=f"H={config.n_heads}, G={config.n_kv_heads}")
