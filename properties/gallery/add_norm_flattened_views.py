"""Pitfall: the add + norm flattens its two inputs with ``view`` — under gradient accumulation x and the residual end
up sharing one ``.grad`` buffer, and every later backward adds into it twice.

The mistake: the module computes on ``x.view(-1, D)`` and ``residual.view(-1, D)`` (kernels want 2-D rows) and
reshapes the results back — correct values, correct first gradients. But the backward of h = x + r hands both
views one gradient tensor, each view's backward returns a view of it, and autograd's accumulator *steals* a
gradient it believes unshared without noticing that two views alias one storage: ``x.grad`` and ``residual.grad``
become the same memory. The next backward (gradient accumulation over micro-batches) adds x's contribution and the
residual's into that one buffer: both gradients grow twice as fast as they should.

Why people make it: flattening to rows is the first line of every kernel wrapper, and the aliasing appears only
when both inputs are leaves (or retain their gradients) and a second backward accumulates.

Evidence: pytorch/pytorch#34082 (autograd's copy avoidance in AccumulateGrad is unsound in the presence of
views). Found by this suite: the torch-compile adapter flattened its inputs this way until the accumulated
protocol of AddRMSNorm's gradient law showed it.

Caught by: AddRMSNorm.add_rmsnorm_gradients_match_golden under the call protocol "accumulated" — two backward
passes must leave exactly twice the first gradient.
"""

from __future__ import annotations

import torch

import nanolm_core
from nanolm_core._checks import check_features, check_same
from nanolm_core.modules import rms_norm

__all__ = ["AddRMSNorm"]


class AddRMSNorm(nanolm_core.AddRMSNorm):
    """Correct values and first gradients; WRONG accumulation: x.grad and residual.grad alias one buffer."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(x, self.dim, "AddRMSNorm", self.weight)
        check_same(residual, x, "residual", "AddRMSNorm")
        rows, stream = x.view(-1, self.dim), residual.view(-1, self.dim)  # the bug: views of the caller's leaves
        h = rows + stream
        return rms_norm(h, self.weight, self.eps).view(x.shape), h.view(x.shape)
