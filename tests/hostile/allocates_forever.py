"""RMSNorm whose forward allocates until memory runs out."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        hoard = []
        while True:
            hoard.append(torch.ones(2**28))  # 1 GiB at a time
