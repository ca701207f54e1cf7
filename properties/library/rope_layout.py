"""The interleaved RoPE layout seen as the contract's: the view the Block's record builds (``components``, its
``builder``) for an implementation that declares ``rope_layout: "interleaved"``."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from properties.adapters.kit import permute_rope

__all__ = ["RopeLayout"]


class RopeLayout(nn.Module):
    """A Block that declares the interleaved RoPE layout, as the contract sees it: the same submodules and
    parameters under the same names (the contract's rotate-half rows, as loaded), and a forward that hands the
    Block W_q and W_k with each head's rows permuted to the interleaved layout (``kit.permute_rope``, through
    ``torch.func.functional_call``: differentiable, nothing is modified). q·kᵀ is invariant under one
    permutation of q's and k's features, so a correct interleaved Block computes the contract's function."""

    def __init__(self, block: nn.Module, config: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_block", block)  # not a child: the parameter names stay the contract's
        self._modules, self._parameters, self._buffers = block._modules, block._parameters, block._buffers
        self.heads = {"attn.wq.weight": config.n_heads, "attn.wk.weight": config.n_kv_heads}
        self.training = block.training

    def to(self, *args: Any, **kwargs: Any) -> RopeLayout:  # moving, switching the view is the Block's step
        self._block.to(*args, **kwargs)
        return self

    def train(self, mode: bool = True) -> RopeLayout:
        self._block.train(mode)
        self.training = mode
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = {}
        for name, n in self.heads.items():  # by attribute: under functional_call a weight is a plain tensor
            owner, attr = name.rsplit(".", 1)
            rows[name] = permute_rope(getattr(self.get_submodule(owner), attr), n)
        return torch.func.functional_call(self._block, rows, (x,))
