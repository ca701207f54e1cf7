"""golden — the oracle: exact/high-precision evaluation, correct rounding, the stored corpus.

``golden.rmsnorm(x, w, eps)`` etc. return a :class:`Golden` (hi + lo double-double, ≥ 100 bits);
``g.rounded(dtype)`` is the correctly rounded value. The maths is in :mod:`golden.definitions`, the exact fast
paths in :mod:`golden.fast`, the evaluation and self-validation in :mod:`golden.framework`, assembled by
:mod:`golden.engine`; the stored corpus is :mod:`golden.corpus` (its manifest's hash pinned there), its recipe
:mod:`golden.recipes`.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from golden.engine import (
        BLOCK_PARAMS,
        Golden,
        GoldenError,
        GoldenPrecisionError,
        GoldenTimeoutError,
        add_rmsnorm,
        add_rmsnorm_vjp,
        attention,
        block,
        layernorm,
        rmsnorm,
        rmsnorm_vjp,
        silu,
        swiglu,
        swiglu_vjp,
    )
    from golden.rounding import round_dd

__all__ = [
    "BLOCK_PARAMS",
    "Golden",
    "GoldenError",
    "GoldenPrecisionError",
    "GoldenTimeoutError",
    "add_rmsnorm",
    "add_rmsnorm_vjp",
    "attention",
    "block",
    "layernorm",
    "rmsnorm",
    "rmsnorm_vjp",
    "round_dd",
    "silu",
    "swiglu",
    "swiglu_vjp",
]
__version__ = "1.0.0"

# Imported when first used, not by ``import golden``: the command line declares ``golden verify|regen|bench`` and
# prints its help without importing torch and the engine (bench/cli_start.py).
_SOURCE = {name: "golden.rounding" if name == "round_dd" else "golden.engine" for name in __all__}


def __getattr__(name: str) -> Any:
    if name not in _SOURCE:
        raise AttributeError(f"module 'golden' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_SOURCE[name]), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
