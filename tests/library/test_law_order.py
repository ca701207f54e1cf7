"""No verdict depends on law order: a law run alone and the same law run after others, in one process, give the
same result (status, cause, examples, examples until the first failure, max ULP error).

The runner derives each law's seed from the run seed and the law's identity, the ci profile is derandomized, and
the state guard restores torch's global settings after every call of the implementation; these tests check that
nothing else carries over from one law to the next — for the reference, and for a wrong implementation whose
class-level cache does carry state from call to call (its designated law compares every call with golden, so
the cache's contents left by earlier laws cannot hide it).
"""

from __future__ import annotations

import pytest
import torch

from properties.running.runner import LAWS, run_check

FIELDS = ("law_id", "dtype", "status", "cause", "examples", "found_after", "max_ulp")

# (implementation, the law under test, the laws run before it in the same process)
CASES = [
    (
        "nanolm_core",
        "RMSNorm.rmsnorm_is_exact_up_to_the_overflow_threshold",
        ["RMSNorm.rmsnorm_ignores_memory_layout", "RMSNorm.rmsnorm_follows_its_module_lifecycle"],
    ),
    (
        "nanolm_core",
        "Block.block_every_earlier_token_reaches_the_last",
        ["Block.block_follows_its_module_lifecycle", "Block.block_is_causal"],
    ),
    (
        "properties.gallery.rope_class_cache",
        "Block.block_follows_its_module_lifecycle",
        ["Block.block_matches_golden", "Block.block_is_causal"],
    ),
]


def _verdicts(results):
    return [tuple(getattr(r, f) for f in FIELDS) for r in results]


@pytest.mark.parametrize(("impl", "law", "before"), CASES, ids=[f"{i}-{law.split('.')[1]}" for i, law, _ in CASES])
def test_a_law_alone_and_after_others_gives_the_same_verdict(impl, law, before):
    dtypes = ["fp32"]
    alone = run_check(impl, profile="ci", only=[law], dtypes=dtypes)
    state = (torch.get_default_dtype(), torch.is_grad_enabled(), torch.get_num_threads())
    after = run_check(impl, profile="ci", only=[*before, law], dtypes=dtypes)
    assert (torch.get_default_dtype(), torch.is_grad_enabled(), torch.get_num_threads()) == state
    again = run_check(impl, profile="ci", only=[law], dtypes=dtypes)
    mine = [r for r in after if r.law_id == law]
    assert _verdicts(mine) == _verdicts(alone) == _verdicts(again)


@pytest.mark.parametrize("writer", ["inplace_swiglu", "inplace_input", "inplace_residual"])
def test_an_implementation_that_writes_into_its_input_leaves_the_next_verdict_alone(writer):
    """A subject that overwrites the tensors it is handed (the gallery's in-place entries) runs every law of its
    component first; the reference then still passes each of them in the same process (a law must never hand a
    subject a tensor it keeps: swiglu_is_elementwise_silu_gate once did)."""
    from properties.gallery import PITFALLS

    component = PITFALLS[writer].component
    laws = [law_id for law_id in LAWS if law_id.startswith(component + ".") and "stored" not in law_id]
    run_check(PITFALLS[writer].module, profile="ci", only=laws, dtypes=["bf16"])
    failed = [r for r in run_check("nanolm_core", profile="ci", only=laws, dtypes=["bf16"]) if r.status == "failed"]
    assert not failed, [(r.law_id, r.message[:200]) for r in failed]
