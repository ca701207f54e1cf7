"""RMSNorm whose forward ends its process with os._exit(0)."""

import os

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        os._exit(0)
