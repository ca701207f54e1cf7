"""RMSNorm whose first forward starts a background process (a fork: it inherits everything the worker holds)
that, a few seconds later, overwrites the JSON report with "0 failed" and writes a marker file — unless it was
ended with the run. With $NANOLM_TEST_ESCAPE set it also leaves the worker's process group and session (setsid)
and forks again, its parent exiting: an orphan in a session of its own. Its pid goes to $NANOLM_TEST_PIDS (a
folder), for the test to look for it afterwards."""

import os
import time
from pathlib import Path

import nanolm_core

_started = []


def _writer() -> None:
    if os.environ.get("NANOLM_TEST_ESCAPE"):
        os.setsid()
        if os.fork() != 0:
            os._exit(0)  # the orphan carries on
    pids = Path(os.environ["NANOLM_TEST_PIDS"])
    (pids / str(os.getpid())).write_text("writer")
    time.sleep(float(os.environ.get("NANOLM_TEST_DELAY", "4")))
    report = os.environ.get("NANOLM_TEST_REPORT")
    if report:
        Path(report).write_text('{"summary": {"failed": 0}, "forged": true}')
    (pids / "wrote").write_text("the background process outlived the run")


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        if not _started:
            _started.append(True)
            if os.fork() == 0:
                try:
                    _writer()
                finally:
                    os._exit(0)
        return super().forward(x) * 1.05  # wrong: the run must fail, and its report must say so
