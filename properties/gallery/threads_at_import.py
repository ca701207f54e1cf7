"""Pitfall: a module that reconfigures torch when it is imported (here: its thread count).

The mistake: ``torch.set_num_threads(1)`` at the top of the module, to make its own kernels faster or
reproducible. Importing it changes how every other model in the process computes: CPU reductions are split
differently for another thread count, so results change in their last bits and throughput collapses.

Why people make it: a performance fix for one workload, written where it is easiest — at import.

Evidence: wasserth/TotalSegmentator#384 (torch thread count and cudnn.benchmark changed and never
restored), MouseLand/cellpose#1253 (TF32 enabled for every matmul in the process at import).

Caught by: Module.module_import_leaves_torch_state_unchanged. The component itself is the reference.
"""

from __future__ import annotations

import torch

import nanolm_core

__all__ = ["RMSNorm"]

torch.set_num_threads(max(1, torch.get_num_threads() + 1))  # the bug: global state changed at import


class RMSNorm(nanolm_core.RMSNorm):
    """The reference RMSNorm: the component is right, the module's import is not."""
