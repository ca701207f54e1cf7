"""A wrong RMSNorm (output × 1.05) whose forward writes a malformed message — the number 5, as a pickle and as
JSON — on every pipe of its process. A malformed message is the subject's failure, never a crash of the judge."""

import pickle

import nanolm_core
from tests.hostile._frames import write_everywhere


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        write_everywhere(b"5")
        write_everywhere(pickle.dumps(5))
        return super().forward(x) * 1.05
