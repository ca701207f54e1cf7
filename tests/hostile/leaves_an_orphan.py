"""A wrong RMSNorm (output × 1.05) whose import starts a background process in a session of its own that outlives
its parent (60 s; its pid is appended to $NANOLM_HOSTILE_PIDS when set, for the test to end it). The run must end
with its verdict and must not wait for it: it never holds the caller's output."""

import os
import subprocess
import sys

import nanolm_core

_orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
if os.environ.get("NANOLM_HOSTILE_PIDS"):
    with open(os.environ["NANOLM_HOSTILE_PIDS"], "a") as f:
        f.write(f"{_orphan.pid}\n")


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        return super().forward(x) * 1.05
