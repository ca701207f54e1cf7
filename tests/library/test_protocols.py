"""The call protocols (properties/library/protocols.py): each one has power of its own — the catalogue entry made
for it fails the law under that protocol and passes it called plainly —, the reference holds under every protocol,
and the mechanism does what it claims (views, cotangents, pins, aliasing, the determinism witness)."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from properties.gallery import PITFALLS
from properties.library import harness, protocols
from properties.library import strategies as S
from properties.library.context import LawContext, LawFailure, NotApplicable, open_context
from properties.running.loading import load
from properties.running.runner import LAWS

P = protocols
PINS = {
    "RMSNorm.rmsnorm_matches_golden": S.RMSNORM_PROTOCOL_PIN,
    "RMSNorm.rmsnorm_gradients_match_golden": S.RMSNORM_PROTOCOL_GRAD_PIN,
    "SwiGLU.swiglu_matches_golden": S.SWIGLU_PROTOCOL_PIN,
    "SwiGLU.swiglu_gradients_match_golden": S.SWIGLU_PROTOCOL_GRAD_PIN,
    "Block.block_matches_golden": S.BLOCK_PROTOCOL_PIN,
    "Block.block_jacobian_is_identity_plus_branch": S.BLOCK_PROTOCOL_PIN,
    "AddRMSNorm.add_rmsnorm_matches_golden": S.ADD_RMSNORM_PINS["every protocol"],
    "AddRMSNorm.add_rmsnorm_gradients_match_golden": S.ADD_RMSNORM_PINS["every protocol, gradients"],
}


def run_under(law_id: str, spec: str, dtype: torch.dtype, protocol: P.Protocol) -> LawFailure | None:
    """The law once, on its protocol pin, under ``protocol``: None if it holds, else its failure."""
    law, impl = LAWS[law_id], load(spec)
    failure: list[LawFailure] = []

    @settings(max_examples=1, database=None, phases=(Phase.generate,), deadline=None)
    @given(st.just(None))
    def once(_: None) -> None:
        try:
            law.body(impl, dtype, "cpu", PINS[law_id].under(protocol))
        except LawFailure as exc:
            failure.append(exc)

    with open_context(LawContext(law_id, law.component, dtype, "cpu", "ci", False, 0, "reproduce")):
        once()
    return failure[0] if failure else None


# Each protocol's own entry, and the protocols under which it fails (the designated one first, with cause "law";
# another may make it crash: a buffer reused across modes, state saved for a backward that another shape
# overwrote). An entry failing under several protocols is a bug of several calling patterns; none fails when
# called plainly.
CAUGHT_BY = {
    "rmsnorm_training_path_unbiased": (P.TRAIN,),
    "block_decode_path_in_prefill": (P.INFERENCE,),
    "rmsnorm_reused_output_buffer": (P.HELD, P.SWITCHED),
    "swiglu_fused_cache_by_shape": (P.ALTERNATED,),
    "rmsnorm_weight_captured_at_init": (P.TIED,),
    "rmsnorm_upcast_decided_once": (P.MOVED,),
    "rmsnorm_inference_kernel_kept": (P.SWITCHED,),
    "rmsnorm_grad_reset_in_forward": (P.ACCUMULATED,),
    "rmsnorm_saved_on_module": (P.BETWEEN, P.HELD),
    "rmsnorm_dy_assumed_contiguous": (
        P.COTANGENT_SUM,
        P.COTANGENT_ROW,
        P.COTANGENT_TRANSPOSED,
        P.COTANGENT_STRIDED,
    ),
    "rmsnorm_broadcast_dy_fast_path": (P.COTANGENT_ROW, P.COTANGENT_SUM),
    "rmsnorm_dy_unit_column_stride": (P.COTANGENT_TRANSPOSED, P.COTANGENT_SUM),
    "rmsnorm_dy_row_pitch": (P.COTANGENT_STRIDED, P.COTANGENT_ROW),
    "rmsnorm_frozen_gamma_skips_term": (P.PARTIAL,),
    "rmsnorm_cast_cached_without_grad": (P.CHECKPOINT_REENTRANT, P.SWITCHED),
    "add_norm_reused_buffers": (P.HELD,),
    "add_norm_flattened_views": (P.ACCUMULATED,),
}


def test_every_protocol_has_an_entry_of_its_own():
    own = {caught[0] for caught in CAUGHT_BY.values()}
    assert own == set(P.PROTOCOLS.values()) - {P.PLAIN, P.CHECKPOINT}, "a protocol without an entry of its own"
    for name in CAUGHT_BY:
        assert name in PITFALLS and CAUGHT_BY[name][0].name in " ".join(PITFALLS[name].docstring.split())


@pytest.mark.parametrize("name", list(CAUGHT_BY))
def test_an_entry_fails_under_its_protocol_by_the_law_and_holds_called_plainly(name):
    pitfall, protocol = PITFALLS[name], CAUGHT_BY[name][0]
    failure = run_under(pitfall.law, pitfall.module, pitfall.torch_dtype, protocol)
    assert failure is not None and failure.cause == "law", f"{name} under {protocol.name}: {failure}"
    assert f"protocol: {protocol.name}" in " ".join(str(failure).split())  # the message names the protocol
    assert run_under(pitfall.law, pitfall.module, pitfall.torch_dtype, P.PLAIN) is None


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CAUGHT_BY))
def test_an_entry_fails_exactly_under_its_protocols(name):
    pitfall = PITFALLS[name]
    family = LAWS[pitfall.law].body.protocols
    failures = {p: run_under(pitfall.law, pitfall.module, pitfall.torch_dtype, p) for p in family}
    failing = {p for p, f in failures.items() if f is not None}
    assert failing == set(CAUGHT_BY[name]), f"{name}: fails under {sorted(p.name for p in failing)}"


@pytest.mark.parametrize("law_id", list(PINS))
@pytest.mark.parametrize("dtype", [pytest.param(torch.float64, marks=pytest.mark.slow), torch.float16])
def test_the_reference_holds_under_every_protocol(law_id, dtype):
    """(fp32 and bf16 run every pinned protocol in the kill matrix's check of the reference; here the others.)"""
    for protocol in LAWS[law_id].body.protocols:
        failure = run_under(law_id, "nanolm_core", dtype, protocol)
        assert failure is None, f"{protocol.name}: {failure}"


@pytest.mark.parametrize(
    ("law_id", "protocol"),
    [("RMSNorm.rmsnorm_matches_golden", P.HELD), ("AddRMSNorm.add_rmsnorm_matches_golden", P.MOVED)],
    ids=["held: a twin in bf16", "moved: loaded in fp64"],
)
def test_a_side_call_in_an_unsupported_dtype_is_left_out_not_the_law(law_id, protocol):
    """onnxruntime's norms have no bf16 (RMSNormalization) and no fp64 (SkipSimplifiedLayerNormalization): the
    protocol's unjudged call in that dtype is left out and the fp32 verdict stands (a skip would hide it)."""
    pytest.importorskip("onnxruntime")
    try:
        failure = run_under(law_id, "onnxruntime", torch.float32, protocol)
    except NotApplicable as skipped:
        pytest.fail(f"the law was skipped in fp32: {skipped}")
    assert failure is None, failure


def test_pins_run_every_pinned_protocol_in_the_pin_dtypes_only():
    body = LAWS["RMSNorm.rmsnorm_gradients_match_golden"].body
    pinned = [getattr(e.kwargs["data"], "protocol", None) for e in body.hypothesis_explicit_examples]
    assert [p.protocol for p in pinned if isinstance(p, P.Pinned)][::-1] == list(P.PINNED[P.GRADIENT])
    assert P.PIN_DTYPES == (torch.float32, torch.bfloat16)


def test_protocols_survive_pickling_as_drawn_values():
    for protocol in P.PROTOCOLS.values():
        assert copy.deepcopy(protocol) is protocol
        buffer = io.BytesIO()
        torch.save({"draws": [("protocol", protocol), ("protocol", P.Pinned(protocol))]}, buffer)
        buffer.seek(0)
        draws = torch.load(buffer, weights_only=False)["draws"]
        assert draws[0][1] is protocol and draws[1][1].protocol is protocol


@pytest.mark.parametrize("whole", [True, False])
def test_a_broadcast_cotangent_is_a_stride_0_view_of_a_nan_buffer(whole):
    with S.cotangents_of_kind("sum" if whole else "row"):
        g = S.cotangent((2, 3, 5), torch.float32, 0)
    view = P._broadcast(g, whole)
    assert torch.equal(view, g) and view.stride()[:-1] == (0, 0)
    assert view.stride()[-1] == (0 if whole else 1)
    storage = torch.as_strided(view, (view.untyped_storage().nbytes() // 4,), (1,), 0)
    assert torch.isnan(storage).sum() >= g.numel() - g.shape[-1]


def test_cotangent_kinds_give_the_values_of_a_sum_and_of_a_row_broadcast():
    assert torch.equal(S.cotangent((2, 4), torch.bfloat16, 1), S.cotangent((2, 4), torch.bfloat16, 1))
    with S.cotangents_of_kind("sum"):
        assert torch.equal(S.cotangent((2, 4), torch.float16, 1), torch.ones(2, 4, dtype=torch.float16))
    with S.cotangents_of_kind("row"):
        g = S.cotangent((3, 2, 4), torch.float32, 1)
    assert (g == g[0, 0]).all() and g.is_contiguous() and not (g == 1).all()
    with pytest.raises(ValueError, match="unknown cotangent kind"):
        S.cotangents_of_kind("diagonal").__enter__()


def test_fresh_inputs_keep_shape_dtype_device_or_add_a_row():
    x, r = torch.zeros(2, 3, 4, dtype=torch.bfloat16), torch.zeros(5, dtype=torch.float64)
    a, b = P.fresh((x, r), 1)
    assert a.shape == x.shape and a.dtype == x.dtype and b.shape == r.shape and not torch.equal(a, x)
    a, b = P.fresh((x, r), 1, more_rows=True, dtype=torch.float32)
    assert a.shape == (3, 3, 4) and b.shape == (2, 5) and a.dtype == b.dtype == torch.float32


def test_memory_overlap_is_found_for_views_and_not_for_neighbours():
    buf = torch.zeros(4, 6)
    assert P._overlap(buf[1], buf[:, 2]) and not P._overlap(buf[0], buf[1]) and not P._overlap(buf, torch.zeros(3))


class _ReturnsItsInput(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class _NoisyBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2 + torch.rand_like(g) * 1e-6  # a correct but non-deterministic backward


class _Noisy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        return _NoisyBackward.apply(x) * self.weight


def _subject(module: torch.nn.Module, s: P.Session) -> None:
    spec = P.Spec("Module", torch.float32, "cpu", {}, lambda *a, **k: module, lambda what, fn: fn())
    s.register(module, spec)


def _in_test(fn):
    @settings(max_examples=1, database=None, phases=(Phase.generate,), deadline=None)
    @given(st.just(None))
    def once(_):
        fn()

    once()


def test_held_outputs_find_an_output_that_is_its_input():
    def check() -> None:
        with P.under(P.HELD) as s:
            module = _ReturnsItsInput()
            _subject(module, s)
            with pytest.raises(LawFailure, match="shares memory with an input"):
                harness.call(module, torch.ones(2, 3), component="Module")

    _in_test(check)


def test_a_module_the_law_built_itself_is_called_plainly():
    calls = []

    class Counting(torch.nn.Module):
        def forward(self, x):
            calls.append(torch.is_grad_enabled())
            return x * 2

    def check() -> None:
        with P.under(P.HELD):
            harness.call(Counting(), torch.ones(2), component="reference")

    _in_test(check)
    assert calls == [False]


def test_accumulation_is_measured_not_judged_for_a_nondeterministic_backward():
    from properties.library import context

    ctx = LawContext("Module.law", "Module", torch.float32, "cpu", "ci", False, 0, "reproduce")

    def check() -> None:
        with P.under(P.ACCUMULATED) as s:
            module = _Noisy()
            _subject(module, s)
            x = torch.ones(2, 3, requires_grad=True)
            y = harness.call(module, x, component="Module", grad=True)
            (dx, dw) = harness.backward(y, torch.ones(2, 3), [x, module.weight], component="Module")
            assert dx is not None and dw is not None and x.grad is None and module.weight.grad is None

    with open_context(ctx):
        _in_test(check)
    assert ctx.recorder.measurements["accumulation"].startswith("not judged")
    assert context.current() is None
    assert np.isfinite(1.0)


class _AddNorm(torch.nn.Module):
    """forward(x, residual) -> (y, h): the shape of a fused add-norm, for the protocols' multi-output path."""

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(-1.5, 1.5, dim))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = x + residual
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight, h


@pytest.mark.parametrize("protocol", [p for p in P.GRADIENT if p not in (P.TIED, P.MOVED)], ids=str)
def test_protocols_work_on_several_inputs_and_outputs(protocol):
    """Every gradient protocol on a module of two inputs and two outputs gives the plain gradients."""

    def grads(p: P.Protocol) -> list[torch.Tensor]:
        out: list[torch.Tensor] = []

        def check() -> None:
            with P.under(p) as s:
                module = _AddNorm()
                _subject(module, s)
                x = torch.linspace(-1, 2, 12).reshape(3, 4).requires_grad_(True)
                r = torch.linspace(2, -1, 12).reshape(3, 4).requires_grad_(True)
                y = harness.call(module, x, r, component="AddNorm", grad=True)
                cots = tuple(S.cotangent((3, 4), torch.float32, k) for k in (1, 2))
                out.extend(harness.backward(y, cots, [x, r, module.weight], component="AddNorm"))

        _in_test(check)
        return out

    plain = grads(P.PLAIN) if protocol.cotangents == "random" else None
    got = grads(protocol)
    assert all(g is not None for g in got)
    if plain is not None:
        for g, e in zip(got, plain, strict=True):
            torch.testing.assert_close(g, e, rtol=1e-6, atol=1e-6)
