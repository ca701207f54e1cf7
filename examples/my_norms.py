"""An implementation to check, as a user writes one: RMSNorm and SwiGLU on torch primitives.

nanolm-verify check examples/my_norms.py        # Block is "not provided" → skipped
"""

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):  # compute in fp32 (fp64 stays fp64), round once
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        return F.rms_norm(x.to(c), x.shape[-1:], self.weight.to(c), self.eps).to(x.dtype)


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        self.w_gate = nn.Linear(dim, hidden_dim, bias=False)
        self.w_up = nn.Linear(dim, hidden_dim, bias=False)
        self.w_down = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))
