"""A wrong RMSNorm (output × 1.05) that, on import, patches the verifier in its own process: ``Task.run`` returns
"passed", the laws' and the assertions' ``fail`` and every assertion function do nothing, ``golden.rmsnorm``
returns its own output, ``torch.equal`` always agrees. None of it may reach the verdict: the laws, golden and the
assertions run in a process that never imports this module."""

import torch

import golden
import nanolm_core
from properties.library import assertions, harness
from properties.library.laws import rmsnorm as rmsnorm_laws
from properties.running import runner


def _passed(self, impl):
    return runner.LawResult(
        self.law_id, self.component, self.dtype, self.device, "passed", profile=self.profile, seed=self.seed
    )


def _nothing(*args, **kwargs):
    return None


runner.Task.run = _passed
for module in (assertions, harness, rmsnorm_laws):
    for name in ("fail", "assert_matches_golden", "assert_close", "assert_unchanged", "assert_output_contract"):
        if hasattr(module, name):
            setattr(module, name, _nothing)
_honest_golden = golden.rmsnorm
golden.rmsnorm = lambda x, weight, eps: _honest_golden(x * 1.05, weight, eps)
torch.equal = lambda *args, **kwargs: True


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        return super().forward(x) * 1.05
