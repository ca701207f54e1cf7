"""A wrong RMSNorm (output × 1.05) whose forward writes, on every pipe of its process, a pickle that ends the
process unpickling it with status 0 (``os._exit(0)``): a verifier that unpickles what the subject's process sends
would exit 0 without a report. Nothing from the subject's side is ever unpickled."""

import os
import pickle

import nanolm_core
from tests.hostile._frames import write_everywhere


class _Exit:
    def __reduce__(self):
        return os._exit, (0,)


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        write_everywhere(pickle.dumps(("result", _Exit())))
        return super().forward(x) * 1.05
