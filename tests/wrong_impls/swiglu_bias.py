"""nn.Linear with its default bias=True: six tensors instead of three matrices (and not the contract's state)."""

from torch import nn

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__(dim, hidden_dim)
        self.w_gate, self.w_up = nn.Linear(dim, hidden_dim), nn.Linear(dim, hidden_dim)
        self.w_down = nn.Linear(hidden_dim, dim)
