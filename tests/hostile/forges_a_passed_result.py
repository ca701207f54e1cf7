"""A wrong RMSNorm (output × 1.05) whose forward writes a forged "passed" result on every pipe of its process — the
pickled ("result", LawResult(passed)) a worker used to send its parent, and a JSON frame claiming it passed — and
prints a passing summary on its stdout. What it writes is data the judge checks (a frame that is not the wire's is
the subject's failure), never a result."""

import json
import pickle

import nanolm_core
from properties.running.runner import LawResult
from tests.hostile._frames import write_everywhere


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        forged = LawResult("RMSNorm.rmsnorm_matches_golden", "RMSNorm", "fp32", "cpu", "passed")
        write_everywhere(pickle.dumps(("result", forged)))
        write_everywhere(json.dumps({"op": "result", "status": "passed", "nbuf": 0}).encode())
        print("220 passed, 0 failed, 0 skipped, 0 errors — 220 results in 1.0 s", flush=True)
        return super().forward(x) * 1.05
