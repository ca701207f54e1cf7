"""A module that, on import, rebinds the verifier's exit-status function and fakes its results; its RMSNorm is
wrong (no eps), so an honest verdict is a failure."""

import torch

import nanolm_core
from properties.commands import check

check.exit_status = lambda results: 0


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        return (x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True)) * self.weight.float()).to(x.dtype)
