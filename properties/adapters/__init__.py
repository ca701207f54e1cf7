"""Adapters: third-party implementations wrapped to the contract, each declaring its convention.

Each adapter module defines the contract's components it can honestly provide (``RMSNorm``, ``SwiGLU``,
``Block``) with exactly the contract's parameter names, and may define:

``SKIP_REASON``  a string when the adapter cannot run here at all (missing package, no CUDA).
``CONVENTIONS``  ``{component: {key: value}}`` describing *how* the component computes, validated by
                 ``properties.library.conventions`` (the typed declarations and what they mean) and *honoured* by
                 the laws: a numeric declaration goes into every bound, so the adapter is judged at the precision
                 it declares (``docs/adapters.md``, "Declaring your conventions"). Typed keys, e.g.:

    compute_dtype   the arithmetic's dtype per input dtype: "fp32" for every input, or {"fp64": "fp32"}
    eps_dtype, accumulation_dtype, flush_subnormals, roundings, reduction, dtypes, eps_default, eps_placement,
    batch_invariant (compute_dtype, eps_dtype, accumulation_dtype, flush_subnormals and batch_invariant also per
                    input dtype: {"bf16": ["input"]})
    weight_offset   float: the gain is formed as offset + (w − offset) (Gemma's 1 + w); the module's ``weight``
                    is still the contract's gain w
    rope_layout     the layout of W_q/W_k rows the Block expects: "rotate-half", or "interleaved" (the suite
                    then hands it the rows permuted by ``kit.permute_rope``)

                 and free-text descriptions printed beside the measurements: ``formula``, ``rounding``,
                 ``compute``, ``weight_mapping``, ``attention``, ``rope``, ``backward``, ``source``, ``notes``.

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
