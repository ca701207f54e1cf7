"""flax's ``nn.RMSNorm`` as JAX computes it, in torch: the statistic of x promoted to fp32 (``_compute_stats``), the
stored x times the fp32 ``rsqrt(var + eps)`` (``_normalize``: promoted to fp32), the scale applied in fp32, the
result cast to the input dtype. Under autodiff the product's and the statistic's contributions to ∂x are each
converted back to the input dtype before they are added (issue 37: 47.8 ULP on the old tier)."""

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        c = torch.promote_types(torch.float32, x.dtype)
        mean2 = torch.square(x.to(c)).mean(-1, keepdim=True)
        mul = torch.rsqrt(mean2 + self.eps)
        y = x * mul  # the stored x (input dtype) promoted against the fp32 statistic
        return (y * self.weight.to(c)).to(x.dtype)
