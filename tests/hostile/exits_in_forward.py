"""RMSNorm whose forward calls sys.exit(0): the verifier must not report success."""

import sys

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        sys.exit(0)
