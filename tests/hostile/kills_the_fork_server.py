"""Correct modules whose first calls kill the fork server the workers come from (RMSNorm: then it takes 3 s to
answer) and keep another worker busy past that (SwiGLU: 8 s): every worker's exit status then reads "dead" while
the busy one still runs. Markers go to $NANOLM_TEST_PIDS."""

import os
import signal
import time
from pathlib import Path

import nanolm_core

_pids = Path(os.environ["NANOLM_TEST_PIDS"])


def _first(name: str) -> bool:
    try:
        (_pids / name).open("x").close()
    except FileExistsError:
        return False
    return True


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        if _first("killed"):
            os.kill(os.getppid(), signal.SIGKILL)  # a worker's parent is the fork server
            time.sleep(3)
        return super().forward(x)


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x):
        if _first("slow"):
            time.sleep(8)
        return super().forward(x)
