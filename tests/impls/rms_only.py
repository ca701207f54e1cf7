"""A correct implementation that provides RMSNorm only, built on torch's F.rms_norm (rounds once)."""

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        return F.rms_norm(x.to(c), x.shape[-1:], self.weight.to(c), self.eps).to(x.dtype)
