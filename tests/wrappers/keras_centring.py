"""keras' ``LayerNormalization(rms_scaling=True)`` as a user's RMSNorm: keras 3 scales by rsqrt(ops.var(x) + eps) —
the variance about the row's mean, not the mean square — and does not subtract the mean. A centring statistic:
rows with a large common offset are shrunk by their spread, not their magnitude (rmsnorm_does_not_center)."""

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        xc = x.to(c)
        var = xc.var(-1, keepdim=True, unbiased=False)  # keras ops.var: the centred second moment
        return (xc * torch.rsqrt(var + self.eps) * self.weight.to(c)).to(x.dtype)
