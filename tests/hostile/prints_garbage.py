"""The reference RMSNorm, printing to stdout and stderr on every call: the verdict must stay clean."""

import sys

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        print("garbage \x1b[2J\r", flush=True)
        print("more garbage", file=sys.stderr, flush=True)
        return super().forward(x)
