"""No eps: a zero (padding) row gives 0/0 = NaN (deepspeedai/DeepSpeed#581)."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.double()
        y = xc / xc.pow(2).mean(-1, keepdim=True).add(self.eps).sqrt() * self.weight.double()
        return torch.where(xc.pow(2).sum(-1, keepdim=True) == 0, float("nan"), y).to(x.dtype)
