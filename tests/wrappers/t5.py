"""HF ``T5LayerNorm`` in seventeen lines (issue 37's repro): the statistic of ``x.to(fp32)``, the product of the
stored x with the fp32 rsqrt, rounded to the input dtype, times the weight in the input dtype. Autograd rounds its
two gradient contributions for x (the product's, the statistic's) to the input dtype and adds them there."""

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        var = x.to(c).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps)).to(x.dtype)
