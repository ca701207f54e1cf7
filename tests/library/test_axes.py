"""The generic axes of a call: the call context as data and the one function applying it (``contexts``), its hook
in the harness, the value regimes (``regimes``), and the families registered over the records (``laws/axes.py``).

The families' power is proven by the catalogue (tests/commands/test_kill_matrix.py: one wrong implementation per
axis and component, caught with cause "law"); here: the mechanism — a context is set around exactly the subject's
call and put back, a subject changing a setting under a context is still reported, a component added by one record
gets every family or a written reason, and the regimes are what they say.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from properties.library import components, contexts, families, harness, regimes, state
from properties.library.context import ContractFailure, LawFailure, NotApplicable, SubjectCrash
from properties.library.laws import axes
from properties.library.table import LAWS


# ---------------------------------------------------------------------------------------------- contexts as data
def test_a_call_context_is_plain_data_that_round_trips():
    ctx = contexts.CallContext(autocast="bf16", deterministic=True, threads=3, grad="inference")
    data = ctx.as_data()
    assert data == {"autocast": "bf16", "deterministic": True, "threads": 3, "grad": "inference"}
    assert all(isinstance(v, (str, bool, int)) for v in data.values())
    assert contexts.CallContext.of(data) == ctx and contexts.CallContext.of(None) == contexts.PLAIN
    assert str(ctx) == "autocast bf16, deterministic algorithms on, 3 threads, inference_mode"
    assert str(contexts.PLAIN) == "as the law calls"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"threads": 0}, "threads"), ({"grad": "eval"}, "grad"), ({"autocast": "fp8"}, "fp8")],
)
def test_a_bad_call_context_is_a_clear_error_naming_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        contexts.CallContext(**kwargs)


def _seen() -> dict[str, object]:
    return {
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "threads": torch.get_num_threads(),
        "autocast": torch.is_autocast_enabled("cpu"),
        "grad": torch.is_grad_enabled(),
        "inference": torch.is_inference_mode_enabled(),
    }


def test_applied_sets_every_setting_around_the_block_and_puts_it_back():
    before = state.snapshot()
    ctx = contexts.CallContext(autocast="bf16", deterministic=True, threads=3, grad="enabled")
    with torch.no_grad(), contexts.applied(ctx):
        inside = _seen()
    assert inside == {"deterministic": True, "threads": 3, "autocast": True, "grad": True, "inference": False}
    assert state.changes(before) == []
    with contexts.applied(contexts.CallContext(grad="inference")):
        assert torch.is_inference_mode_enabled()
    assert not torch.is_inference_mode_enabled() and state.changes(before) == []


class _Recorder(torch.nn.Module):
    """Records the global settings its forward runs under; optionally changes the thread count (a bad subject)."""

    def __init__(self, set_threads: int | None = None) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(4))
        self.set_threads, self.seen = set_threads, None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen = _seen()
        if self.set_threads is not None:
            torch.set_num_threads(self.set_threads)
        return x * self.weight


def test_the_harness_calls_the_subject_under_the_current_context_and_only_there():
    module, before = _Recorder(), state.snapshot()
    ctx = contexts.CallContext(autocast="bf16", deterministic=True, threads=3, grad="inference")
    with contexts.within(ctx):
        assert contexts.current() == ctx
        harness.call(module, torch.ones(2, 4), component="Recorder")
        assert _seen()["threads"] == before["torch threads"]  # outside the call: the run's own settings
    assert module.seen == {"deterministic": True, "threads": 3, "autocast": True, "grad": False, "inference": True}
    assert contexts.current() == contexts.PLAIN and state.changes(before) == []
    harness.call(module, torch.ones(2, 4), component="Recorder")  # no context: the law's own mode (no_grad)
    assert module.seen["threads"] == before["torch threads"] and not module.seen["grad"]


def test_a_subject_changing_a_setting_under_a_context_is_still_a_contract_failure():
    before = state.snapshot()
    with contexts.within(contexts.CallContext(threads=3)), pytest.raises(ContractFailure, match="torch threads"):
        harness.call(_Recorder(set_threads=5), torch.ones(2, 4), component="Recorder")
    assert state.changes(before) == []  # restored by the guard


# ---------------------------------------------------------------------------------------------- regimes
@settings(max_examples=20, deadline=None)
@given(data=st.data(), dtype=st.sampled_from((torch.float64, torch.float32, torch.float16, torch.bfloat16)))
def test_massive_inputs_set_fixed_channels_of_every_input_exactly(data, dtype):
    x = torch.randn(3, 16).to(dtype)
    r = torch.randn(3, 16).to(dtype)
    (mx, mr), how = data.draw(regimes.massive_inputs((x, r)))
    assert how.magnitudes[0] >= 2.0**13 and all(128 <= m <= 1.75 * 2.0**13 for m in how.magnitudes)
    others = [c for c in range(16) if c not in how.channels]
    for before, after in ((x, mx), (r, mr)):
        assert after.dtype == dtype and torch.isfinite(after).all()
        assert torch.equal(after[:, others], before[:, others])
        for c, m in zip(how.channels, how.magnitudes, strict=True):
            assert (after[:, c].double().abs() == m).all()  # exact: (1 + k/4)·2^e


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_the_massive_logit_pin_reaches_logits_near_minus_1e5(dtype):
    import nanolm_core

    c = regimes.massive_logits(dtype)
    block = nanolm_core.Block(c.config).double()
    block.load_state_dict({k: v.double() for k, v in c.params.items()})
    xn = block.attn_norm(c.x.double())
    q, k, _ = block.attn.heads(xn)
    s = block.attn.scores(q, block.attn.expand_kv(k))  # before RoPE: the bulk of the logit (pair (3, 7))
    target = regimes.MASSIVE_LOGIT if dtype != torch.float16 else 2e4
    assert ((s < -0.97 * target) & (s > -1.03 * target)).all()


def test_call_contexts_walk_each_setting_alone_then_together():
    fp32, bf16 = regimes.call_contexts(torch.float32), regimes.call_contexts(torch.bfloat16)
    assert fp32[0] == contexts.PLAIN and any(c.autocast == "bf16" for c in fp32)
    assert all(c.autocast is None for c in bf16)  # CPU autocast casts fp32 only
    for ctxs in (fp32, bf16):
        together = ctxs[-1]
        assert together.deterministic and together.threads and together.grad
        assert {c.grad for c in ctxs} >= {None, "enabled", "inference"}


# ---------------------------------------------------------------------------------------------- the families
def test_every_record_gets_every_family_or_a_written_reason():
    for rec in components.RECORDS.values():
        reasons = axes.not_applicable(rec)
        for family in axes.AXES:
            law_id = axes.law_id(rec, family)
            assert (law_id in LAWS) != (family.name in reasons), (law_id, reasons)
            if law_id in LAWS:
                assert LAWS[law_id].dtypes == family.dtypes and "axis" in LAWS[law_id].tags
                assert rec.name in LAWS[law_id].doc
    assert set(axes.not_applicable(components.record("AddRMSNorm"))) == set()
    assert set(axes.not_applicable(components.record("SwiGLU"))) == {"mixed dtypes", "output subsets"}


def test_a_throwaway_component_gets_every_family_by_its_record():
    rec = dataclasses.replace(components.record("AddRMSNorm"), name="ThrowawayAddNorm", slug="throwaway_add_norm")
    components.register(rec)
    try:
        got = families.apply(rec)
        ids = [i for a in axes.AXES for i in got[a.name]]
        assert ids == [axes.law_id(rec, a) for a in axes.AXES]
        assert all(i in LAWS and LAWS[i].component == "ThrowawayAddNorm" for i in ids)
    finally:
        components.unregister("ThrowawayAddNorm")
        families.forget("ThrowawayAddNorm")
    assert not [i for i in LAWS if i.startswith("ThrowawayAddNorm.")]


def test_a_family_that_cannot_apply_gives_its_reason_and_no_law():
    rec = dataclasses.replace(components.record("SwiGLU"), name="ThrowawayFFN", slug="throwaway_ffn")
    components.register(rec)
    try:
        got = families.apply(rec)
        assert got["mixed dtypes"] == () and got["output subsets"] == ()
        assert "nn.Linear" in axes.not_applicable(rec)["mixed dtypes"]
        assert "one output" in axes.not_applicable(rec)["output subsets"]
    finally:
        components.unregister("ThrowawayFFN")
        families.forget("ThrowawayFFN")


def _twice(x: torch.Tensor) -> torch.Tensor:
    return x.pow(3)


class _OnceDifferentiable(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.pow(3)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class _NoGradBackward(_OnceDifferentiable):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with torch.no_grad():
            return 3 * x * x * g


def test_gradgradcheck_passes_a_twice_differentiable_function_and_fails_one_that_is_not_by_law():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    harness.gradcheck(_twice, (x,), component="T", order=2, what="y")
    with pytest.raises(LawFailure, match="gradgradcheck") as caught:
        harness.gradcheck(_NoGradBackward.apply, (x,), component="T", order=2, what="y")
    assert caught.value.cause == "law"
    with pytest.raises(LawFailure, match="gradgradcheck") as caught:  # @once_differentiable: no second derivative
        harness.gradcheck(_OnceDifferentiable.apply, (x,), component="T", order=2, what="y")
    assert caught.value.cause == "law"


def test_gradgradcheck_reports_an_exception_of_the_subject_as_its_crash():
    def broken(x: torch.Tensor) -> torch.Tensor:
        raise ValueError("boom")

    with pytest.raises(SubjectCrash, match="boom"):
        harness.gradcheck(
            broken, (torch.randn(2, dtype=torch.float64, requires_grad=True),), component="T", order=2, what="y"
        )


def test_a_torch_op_without_a_double_backward_formula_is_not_applicable():
    q = torch.randn(1, 1, 3, 4, dtype=torch.float64, requires_grad=True)

    def attend(q: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    try:
        harness.gradcheck(attend, (q,), component="T", order=2, what="out")
    except NotApplicable as exc:
        assert "double backward not supported by torch" in str(exc)
