"""Laws of the implementation module itself (not of one component)."""

from __future__ import annotations

import torch

from properties.library.assertions import fail
from properties.library.context import count_examples
from properties.library.subject import Implementation
from properties.library.table import law


@law("Module", dtypes=(torch.float32,))
def module_import_leaves_torch_state_unchanged(impl: Implementation, dtype: torch.dtype, device: str) -> None:
    """Importing the implementation leaves torch's global state unchanged (grad mode, default dtype, flush-denormal,
    threads …): a module must not change how every other component computes."""
    count_examples(1)
    if impl.import_effects:
        fail(f"importing {impl.spec} changed torch's global state: {'; '.join(impl.import_effects)} (restored)")
