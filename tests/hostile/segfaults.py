"""RMSNorm whose forward dereferences a null pointer (the worker dies by SIGSEGV)."""

import ctypes

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        ctypes.string_at(0)
