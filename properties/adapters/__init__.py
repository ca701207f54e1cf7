"""Adapters: third-party implementations wrapped to the contract, each declaring its convention.

Each adapter module defines the contract's components it can honestly provide (``RMSNorm``, ``SwiGLU``,
``Block``) with exactly the contract's parameter names, and may define:

``SKIP_REASON``  a string when the adapter cannot run here at all (missing package, no CUDA).
``CONVENTIONS``  ``{component: {key: value}}`` describing *how* the component computes. Keys (all optional,
                 free text unless stated; ``properties.compare`` prints them beside the measurements):

    formula         the function in the contract's symbols, e.g. ``y = x · rsqrt(mean(x²) + eps) · w``
    rounding        where results are rounded to the storage dtype, e.g. "two roundings: fl(fl(x·r)·w)"
    compute_dtype   precision of the arithmetic per input dtype, e.g. "fp32 for every input (fp64 downcast)"
    eps_default     float: the library's default eps (the adapter always passes the contract's eps)
    eps_placement   "inside the square root" | "outside"
    weight_offset   float: the library stores w − offset and computes (offset + stored); 0 for none
    weight_mapping  how the contract's ``weight`` becomes the library's parameter, with its rounding
    attention, rope attention kernel / mask and RoPE variant (Block)
    source          the third-party class or function that does the arithmetic

Wrapping technique: the library's module is built once on the ``meta`` device (no memory, never registered
as a submodule, so it adds nothing to ``state_dict``) and run with ``torch.func.functional_call`` on the
adapter's own parameters, which carry the contract names. The library's forward code runs unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["call_with", "hide"]


def hide(owner: nn.Module, name: str, module: nn.Module) -> None:
    """Attach ``module`` to ``owner`` as a plain attribute: not a submodule, so not in state_dict nor moved."""
    object.__setattr__(owner, name, module)


def call_with(module: nn.Module, params: dict[str, torch.Tensor], *args: Any, **kwargs: Any) -> Any:
    """Run ``module.forward(*args, **kwargs)`` with its parameters replaced by ``params`` (names → tensors)."""
    return torch.func.functional_call(module, params, args, kwargs, strict=True)
