"""RMSNorm whose forward changes torch's thread count (global state) on every call."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        torch.set_num_threads(torch.get_num_threads() + 1)
        return super().forward(x)
