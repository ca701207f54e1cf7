"""Budget laws of the implementation under test: the FFN width it builds from a ModelConfig.

(The ModelConfig arithmetic itself — F = 256·⌈(8D/3)/256⌉, tying saves V·D — is tested in tests/core/test_budget.py.)
"""

from __future__ import annotations

import torch

import nanolm_core
from properties.library.assertions import fail
from properties.library.context import count_examples
from properties.library.subject import Implementation
from properties.library.table import law

AXIS = "parameter budget: the sizes a ModelConfig implies"  # its column in the matrix
DType = torch.dtype


def _on_meta(impl: Implementation, config: nanolm_core.ModelConfig) -> torch.nn.Module:
    """Block(config) built on the meta device; a failure to build there fails the law."""
    try:
        with torch.device("meta"):
            return impl.factory("Block")(config)
    except NotImplementedError:
        raise
    except Exception as exc:
        fail(f"Block({config}) cannot be constructed on the meta device: {type(exc).__name__}: {exc}")


@law("Block", dtypes=(torch.float32,))
def block_ffn_dim_is_8d_over_3(impl: Implementation, dtype: DType, device: str) -> None:
    """Block(config).ffn uses F = config.ffn_dim = 256·⌈(8D/3)/256⌉ hidden units (D = 4096 → 11008, not 4D)."""
    for D, H in ((96, 4), (384, 6), (4096, 32)):
        config = nanolm_core.ModelConfig(dim=D, n_heads=H, n_kv_heads=H)
        module = _on_meta(impl, config)
        shape = tuple(dict(module.named_parameters())["ffn.w_gate.weight"].shape)
        if shape != (config.ffn_dim, D):
            fail(
                f"Block(dim={D}).ffn.w_gate.weight has shape {shape} ≠ (F, D) = ({config.ffn_dim}, {D}); "
                f"F must be 256·⌈(8D/3)/256⌉ = {config.ffn_dim} (4D would be {4 * D})"
            )
        count_examples(1)
