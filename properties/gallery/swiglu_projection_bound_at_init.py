"""Pitfall: SwiGLU binds its fused gate/up projection to its own weight tensors in a closure at construction.

The mistake: ``__init__`` stores ``self._gate_up = lambda x: (F.linear(x, wg), F.linear(x, wu))`` with ``wg, wu``
the module's parameters. Loading new weights in place still works (the parameters are the same objects); but
``copy.deepcopy`` — how EMA models, teacher/student pairs and optimiser snapshots are made — copies the
parameters and keeps the *same* function object, bound to the original's weights: the copy computes with the
original's gate and up projections whatever is loaded into it.

Why people make it: closures over parameters look like a cheap way to pre-bind a fused kernel; deepcopy's treatment
of functions (shared, not copied) is not where anyone looks.

Evidence: test-only (no public report of this module is cited here).

Caught by: SwiGLU.swiglu_survives_copies_moves_and_to_empty — new weights loaded into a deepcopy.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG for a deepcopy: its gate/up projection reads the original module's weights."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__(dim, hidden_dim)
        wg, wu = self.w_gate.weight, self.w_up.weight
        self._gate_up = lambda x: (F.linear(x, wg), F.linear(x, wu))  # the bug: bound to these tensors

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g, u = self._gate_up(x)
        return self.w_down(F.silu(g) * u)
