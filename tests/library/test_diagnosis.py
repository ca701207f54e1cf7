"""Diagnosis of failures (``properties.library.diagnosis``): the first failure of each deliberately unconventional
implementation names its convention — and declaring what it suggests makes that law hold —, a genuine bug gets
"no known convention matches", and a wrong function whose error is as small as another dtype's rounding is not
dressed as that dtype's arithmetic."""

from __future__ import annotations

import ast
import re

import pytest
import torch
import torch.nn.functional as F

import golden
import nanolm_core
from properties.gallery import PITFALLS
from properties.library import diagnosis
from properties.library.conventions import Conventions
from properties.running import runner
from properties.running.loading import load
from properties.running.runner import LAWS, plan, run_law
from tests.correct_impls.unconventional import SUBJECTS, Fp32ForFp64RMSNorm, subject


def _first_failure(impl, component: str) -> runner.LawResult:
    """The first failed result in plan order — the first failure ``check`` prints."""
    for task in plan(profile="ci", only=[component]):
        result = task.run(impl)
        if result.status == "failed":
            return result
    raise AssertionError(f"{impl.spec}: no law failed")


def _suggested(text: str) -> dict:
    """The declaration a diagnosis suggests (`key: value` in Python syntax) as a dict."""
    key, value = re.search(r"declare `(\w+): (.+?)` if that is intended", text).groups()
    return {key: ast.literal_eval(value)}


@pytest.mark.parametrize("name", [n for n, (_, _, d) in SUBJECTS.items() if d is not None])
def test_the_first_failure_names_the_convention_and_declaring_it_makes_the_law_hold(name):
    component, cls, expected = SUBJECTS[name]
    first = _first_failure(subject(component, cls), component)
    assert first.cause == "law"
    assert first.diagnosis.startswith("consistent with"), first.message
    assert f"  diagnosis: {first.diagnosis}" in first.message  # a detail line of the message, before reproduce
    assert first.message.index("diagnosis:") < first.message.index("reproduce:")
    declared = _suggested(first.diagnosis)
    assert declared.keys() == expected.keys()
    again = run_law(LAWS[first.law_id], subject(component, cls, declared), dtype=first.dtype, profile="ci")
    # a finite-difference law (gradcheck, gradgradcheck: first in plan order since the second-order axis) is
    # excused by the declaration, as its diagnosis says; every other law holds under it
    excused = first.law_id.endswith("gradcheck") and again.status == "xfailed" and "declared" in again.message
    assert again.status == "passed" or excused, again.message


def test_a_genuine_bug_gets_no_known_convention_matches():
    component, cls, _ = SUBJECTS["eps outside the square root"]
    first = _first_failure(subject(component, cls), component)
    assert first.diagnosis == diagnosis.NO_MATCH
    assert "diagnosis: no known convention matches" in first.message


class Fp64Off(nanolm_core.RMSNorm):
    """WRONG: fp64 arithmetic, but every output scaled by 1 + 2⁻²³ (an error of fp32's size, no fp32 rounding)."""

    def forward(self, x):
        return F.rms_norm(x, (self.dim,), self.weight, self.eps) * (1 + 2.0**-23)


class TailUnnormalised(nanolm_core.RMSNorm):
    """WRONG: the last column is returned as x·γ (its r forgotten): a structure, not a rounding."""

    def forward(self, x):
        y = F.rms_norm(x, (self.dim,), self.weight, self.eps)
        return torch.cat([y[..., :-1], x[..., -1:] * self.weight[-1:]], dim=-1)


@pytest.mark.parametrize("cls", [Fp64Off, TailUnnormalised])
def test_an_error_of_fp32_size_in_fp64_is_not_called_fp32_arithmetic(cls):
    result = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], subject("RMSNorm", cls), dtype="fp64", profile="ci")
    assert result.status == "failed"
    assert result.diagnosis is None or not result.diagnosis.startswith("consistent with"), result.diagnosis


@pytest.mark.parametrize("name", ["abs_of_x", "rmsnorm_unnormalised_tail", "bf16_accumulation"])
def test_catalogue_bugs_are_not_dressed_as_conventions(name):
    p = PITFALLS[name]
    result = run_law(LAWS[p.law], load(p.module), dtype=p.dtype, profile="ci")
    assert result.status == "failed" and result.cause == "law"
    assert result.diagnosis == diagnosis.NO_MATCH, result.diagnosis


@pytest.mark.parametrize(
    ("name", "looks_like"),
    [
        ("gemma_offset_twice", "looks like Gemma's (1 + w) applied to the contract's gain"),
        ("mean_subtraction", "looks like LayerNorm's centring"),  # issue 37: centring is named
        ("forgot_gamma", "looks like γ = 1: the gain not applied"),
        ("rmsnorm_cached_weight_cast", "looks like stale state: the result is right for the same module's weights"),
        (
            "rope_class_cache",
            "looks like stale state: the result is right for its own weights with another instance's settings",
        ),
        ("rmsnorm_reused_output_buffer", "looks like one output buffer reused across calls"),
    ],
)
def test_catalogue_bugs_of_a_known_kind_are_named(name, looks_like):
    p = PITFALLS[name]
    result = run_law(LAWS[p.law], load(p.module), dtype=p.dtype, profile="ci")
    assert result.status == "failed" and result.diagnosis.startswith(looks_like), result.diagnosis


class LlamaStyle(nanolm_core.RMSNorm):
    """HF Llama's order: x·r in fp32, rounded to the input dtype, then times γ in the input dtype (fp64 here)."""

    def forward(self, x):
        h = x.to(torch.float32)
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class LlamaStyleDivided(nanolm_core.RMSNorm):
    """HF Llama's order dividing by √(ms + eps) instead of multiplying by rsqrt: no order the diagnosis reproduces
    bit for bit, every element rounded at fp32's precision all the same."""

    def forward(self, x):
        h = x.to(torch.float32)
        return self.weight * (h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def test_fp32_rounding_in_every_element_is_fp32_arithmetic_though_the_outputs_are_not_fp32_values():
    law = LAWS["RMSNorm.rmsnorm_matches_golden"]
    result = run_law(law, subject("RMSNorm", LlamaStyleDivided), dtype="fp64", profile="ci")
    head = "consistent with fp32 arithmetic on fp64 inputs ("  # shrunk rows may round as HF Llama's order does:
    evidence = (f"{head}every element carries", f"{head}fp32 arithmetic in HF Llama")
    assert result.diagnosis.startswith(evidence), result.diagnosis
    result = run_law(law, subject("RMSNorm", LlamaStyle), dtype="fp64", profile="ci")  # torch's mean: reproduced
    assert result.diagnosis.startswith("consistent with fp32 arithmetic on fp64 inputs (fp32 arithmetic in HF Llama")


def test_rows_broken_exactly_where_fp32_overflows_are_fp32_arithmetic():
    law = LAWS["RMSNorm.rmsnorm_is_exact_up_to_the_overflow_threshold"]
    result = run_law(law, subject("RMSNorm", Fp32ForFp64RMSNorm), dtype="fp64", profile="ci")
    assert "fp32's range cannot hold" in result.diagnosis and "compute_dtype" in result.diagnosis


def test_a_gradcheck_of_an_fp32_forward_is_explained_as_such():
    law = LAWS["RMSNorm.rmsnorm_gradients_pass_gradcheck"]
    result = run_law(law, subject("RMSNorm", Fp32ForFp64RMSNorm), dtype="fp64", profile="ci")
    assert result.diagnosis.startswith("consistent with fp32 arithmetic")
    assert "finite differences of this forward measure its rounding" in result.diagnosis
    llama = run_law(law, subject("RMSNorm", LlamaStyle), dtype="fp64", profile="ci")
    # shrunk to rows without fp32 values or a per-element spread, fp32 arithmetic in HF Llama's order still
    # reproduces the forward bit for bit (issue 37: it used to say "no known convention matches … its precision")
    assert llama.diagnosis.startswith("consistent with fp32 arithmetic"), llama.diagnosis
    assert "reproduces it bit for bit" in llama.diagnosis


def test_a_declared_batch_variant_kernel_is_diagnosed_as_such():
    p = PITFALLS["batch_variant"]
    result = run_law(LAWS[p.law], load(p.module), dtype=p.dtype, profile="ci")
    assert "depend on the batch size" in result.diagnosis and "`batch_invariant: False`" in result.diagnosis


# ------------------------------------------------------------------------ hypotheses on hand-made calls


def _call(component, x, state, y, *args, **kwargs):
    return {"component": component, "x": x, "state": state, "y": y, "args": args, "kwargs": kwargs, "module": 0}


def _rmsnorm(x, w, eps):
    return F.rms_norm(x, (x.shape[-1],), w, eps)


def test_the_result_of_an_earlier_calls_weights_is_stale_state():
    g = torch.Generator().manual_seed(1)
    x, w1, w2 = torch.randn(3, 16, generator=g), torch.rand(16, generator=g) + 0.5, torch.rand(16, generator=g) - 2
    calls = [
        _call("RMSNorm", x, {"weight": w1}, _rmsnorm(x, w1, 1e-6), 16, eps=1e-6),
        _call("RMSNorm", x, {"weight": w2}, _rmsnorm(x, w1, 1e-6), 16, eps=1e-6),  # computed with the old γ
    ]
    found = diagnosis.diagnose(calls, Conventions("RMSNorm"))
    assert found.kind == "bug" and "stale state" in found.text and "the same module's" in found.text


def test_another_eps_is_named():
    x, w = torch.randn(4, 8, generator=torch.Generator().manual_seed(2)) * 1e-4, torch.ones(8)
    eps = float(torch.finfo(torch.float32).eps)  # nn.RMSNorm(eps=None)
    found = diagnosis.diagnose([_call("RMSNorm", x, {"weight": w}, _rmsnorm(x, w, eps), 8, eps=1e-6)], None)
    assert found.kind == "bug" and "pytorch/pytorch#142848" in found.text


def test_a_square_weight_read_transposed_is_named():
    g = torch.Generator().manual_seed(3)
    D = 8
    x, (wg, wu, wd) = torch.randn(2, D, generator=g), (torch.randn(D, D, generator=g) for _ in range(3))
    y = F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu.t()), wd)  # W_up used as stored: x·W
    state = {"w_gate.weight": wg, "w_up.weight": wu, "w_down.weight": wd}
    found = diagnosis.diagnose([_call("SwiGLU", x, state, y, D, D)], None)
    assert found.text == "looks like w_up.weight read transposed (x·W where nn.Linear computes x·Wᵀ)"


def test_a_view_read_as_if_contiguous_is_named():
    base = torch.randn(4, 16, generator=torch.Generator().manual_seed(4))
    view, w = base[:, ::2], torch.ones(8)
    wrong = torch.as_strided(base, view.shape, (8, 1), 0)  # the kernel ignored the strides
    call = _call("RMSNorm", view.contiguous(), {"weight": w}, _rmsnorm(wrong, w, 1e-6), 8, eps=1e-6)
    call["layout"] = {"stride": view.stride(), "offset": view.storage_offset(), "storage": base.reshape(-1)}
    found = diagnosis.diagnose([call], None)
    assert found.kind == "bug" and "read as if contiguous" in found.text


def test_a_reversed_rope_is_named():
    config = nanolm_core.ModelConfig(dim=16, n_heads=2, n_kv_heads=1, max_seq_len=8)
    block = nanolm_core.Block(config).double()
    g = torch.Generator().manual_seed(5)
    params = {k: torch.randn(v.shape, generator=g, dtype=torch.float64) * 0.3 for k, v in block.state_dict().items()}
    flipped = dict(params)
    for k, n in (("attn.wq.weight", 2), ("attn.wk.weight", 1)):  # rows of each head's second half negated
        w = params[k].clone().reshape(n, -1, 16)
        w[:, w.shape[1] // 2 :] *= -1
        flipped[k] = w.reshape(params[k].shape)
    block.load_state_dict(flipped)
    x = torch.randn(1, 5, 16, generator=g, dtype=torch.float64)
    with torch.no_grad():
        y = block(x)
    found = diagnosis.diagnose([_call("Block", x, params, y, config)], None)
    assert found.kind == "bug" and "RoPE rotating the other way" in found.text


def test_an_accurate_call_leaves_nothing_to_diagnose_and_no_call_says_nothing():
    x, w = torch.randn(2, 8, dtype=torch.float64), torch.ones(8, dtype=torch.float64)
    exact = torch.as_tensor(golden.rmsnorm(x, w, 1e-6).rounded(torch.float64))
    assert diagnosis.diagnose([_call("RMSNorm", x, {"weight": w}, exact, 8, eps=1e-6)], None) is None
    assert diagnosis.diagnose([], None) is None and diagnosis.diagnose(None, None) is None


def test_a_bug_of_the_diagnosis_never_changes_the_verdict(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("diagnosis bug")

    monkeypatch.setattr(diagnosis, "diagnose", broken)
    component, cls, _ = SUBJECTS["eps outside the square root"]
    result = run_law(LAWS["RMSNorm.rmsnorm_matches_golden"], subject(component, cls), dtype="fp32", profile="ci")
    assert result.status == "failed" and result.cause == "law" and result.diagnosis is None
    assert result.measurements["diagnosis error"] == "RuntimeError: diagnosis bug"


def test_an_output_in_a_dtype_the_call_cannot_return_is_the_finding_not_an_eps():
    """rmsnorm_autocast_half_cast's counterexample (D = 1, x = 1: y = γ·(1 − 5e-7)): its output came back in fp16
    under bf16 autocast; rounded to fp16 it is exactly γ — what eps = 0 gives — so the value hypotheses matched
    "eps = 0". The dtype is the finding; under autocast an accepted dtype is the input's or autocast's."""
    x, w = torch.tensor([[1.0]]), torch.tensor([1.3671875])
    y = _rmsnorm(x, w, 1e-6).to(torch.float16)
    call = {**_call("RMSNorm", x, {"weight": w}, y, 1, eps=1e-6), "context": {"autocast": "bf16"}}
    found = diagnosis.diagnose([call], Conventions("RMSNorm"))
    assert found.kind == "bug" and "output y returned in fp16, not bf16 or fp32" in found.text
    assert "eps" not in found.text
    bf16 = {**call, "y": _rmsnorm(x, w, 1e-6).to(torch.bfloat16)}  # autocast's own dtype: accepted, in its bound
    assert diagnosis.diagnose([bf16], Conventions("RMSNorm")) is None


# ------------------------------------------------------------------------ the input row of a regime failure


def test_a_regime_failure_shows_its_input_row():
    x = torch.tensor([[1.0, 2.0, 3.0], [1e-40, -2e-40, 0.0]], dtype=torch.float32)  # row 1: subnormal, eps-dominated
    y = torch.zeros_like(x)
    call = _call("RMSNorm", x, {"weight": torch.ones(3)}, y, 3, eps=1e-6)
    row = diagnosis.input_row([call], {"what": "y", "actual": y.double().numpy(), "index": (1, 0)})
    assert row.startswith("input row (1,) (2 subnormal values; eps-dominated: mean(x²)")
    assert row.endswith("x = [1e-40, -2e-40, 0]")
    assert diagnosis.input_row([call], {"what": "y", "actual": y.double().numpy(), "index": (0, 0)}) is None
    big = torch.tensor([[300.0, 1.0]], dtype=torch.float16)
    call = _call("RMSNorm", big, {"weight": torch.ones(2, dtype=torch.float16)}, big, 2, eps=1e-6)
    row = diagnosis.input_row([call], {"what": "y", "actual": big.double().numpy(), "index": (0, 0)})
    assert "x² overflows fp16: max |x| 300" in row


def test_a_norm_of_a_sum_shows_the_row_it_normalises_as_eps_dominated():
    """AddRMSNorm normalises x + residual: its input row is eps-dominated when the sum is (x alone is not), as a
    record that is a norm (a gain, an eps) says — no component named in the diagnosis."""
    x = torch.tensor([[1.0, -2.0, 3.0]], dtype=torch.float32)
    r = -x + torch.tensor([[1e-5, 0.0, -1e-5]])  # the sum: 1e-5 up to rounding, mean square ≪ eps
    y = torch.zeros_like(x)
    call = {**_call("AddRMSNorm", x, {"weight": torch.ones(3)}, y, 3, eps=1e-6), "residual": r, "outputs": (y, x + r)}
    row = diagnosis.input_row([call], {"what": "y", "actual": y.double().numpy(), "index": (0, 0)})
    assert row is not None and "eps-dominated: mean((x + residual)²)" in row
    plain = diagnosis.input_row(
        [{**call, "component": "RMSNorm", "y": y}], {"what": "y", "actual": y.double().numpy(), "index": (0, 0)}
    )
    assert plain is None  # x alone: mean(x²) ≫ eps, no regime


# ------------------------------------------------------------------------ the commonest causes (issue 37)


def _run(module: str, law: str, dtype: str):
    result = run_law(LAWS[law], load(module), dtype=dtype, profile="ci")
    assert result.status == "failed" and result.cause == "law", result.message
    return result


@pytest.mark.parametrize("module", ["tests.wrappers.hf_llama_norm", "tests.wrappers.hf_t5_norm"])
def test_fp32_arithmetic_where_eps_vanishes_is_fp32_arithmetic_not_eps_zero(module):
    """On x = [1.] and 4·x in fp64, fp32 arithmetic rounds 16 + 1e-6 to 16: the eps = 0 result within fp64's
    bound. fp32 arithmetic reproduces it bit for bit, and that is what the diagnosis says."""
    result = _run(module, "RMSNorm.rmsnorm_is_scale_invariant", "fp64")
    assert 'declare `compute_dtype: {"fp64": "fp32"}`' in result.diagnosis, result.diagnosis


def test_an_fp64_output_with_an_fp32_statistic_is_fp32_arithmetic():
    """HF T5 in an fp64 layer: x (fp64) times an fp32 rsqrt, ·γ in fp64 — no fp32 values, one factor per row."""
    result = _run("tests.wrappers.hf_t5_norm", "RMSNorm.rmsnorm_matches_golden", "fp64")
    assert "T5's" in result.diagnosis and 'compute_dtype: {"fp64": "fp32"}' in result.diagnosis, result.diagnosis


def test_fp32_arithmetic_in_an_fp64_add_rmsnorm_is_named():
    result = _run("tests.wrappers.add_norm_hf", "AddRMSNorm.add_rmsnorm_matches_golden", "fp64")
    assert 'compute_dtype: {"fp64": "fp32"}' in result.diagnosis, result.diagnosis


@pytest.mark.parametrize("dtype", ["fp64", "fp16"])
def test_a_centred_statistic_is_named(dtype):
    result = _run("tests.wrappers.keras_centring", "RMSNorm.rmsnorm_does_not_center", dtype)
    assert result.diagnosis.startswith("looks like a centred statistic"), result.diagnosis


@pytest.mark.parametrize(
    ("law", "dtype"),
    [("RMSNorm.rmsnorm_matches_golden_at_code_path_sizes", "fp32"), ("RMSNorm.rmsnorm_matches_golden", "bf16"),
     ("RMSNorm.rmsnorm_matches_golden", "fp64"), ("RMSNorm.rmsnorm_is_scale_invariant", "fp16")],
)  # fmt: skip
def test_eps_outside_the_square_root_gets_one_answer_across_laws(law, dtype):
    """It used to get "eps stored in fp16" (fp32), "eps = 0" (bf16) and "no known convention" (fp64): where the
    eps-outside function also explains a call, no eps hypothesis is its explanation."""
    assert _run("properties.gallery.eps_outside_sqrt", law, dtype).diagnosis == diagnosis.NO_MATCH


def test_a_gradcheck_of_a_wrong_forward_says_the_forward_is_wrong_not_its_precision():
    """The gradcheck of a forward far off its golden value (a structure no hypothesis names) says the forward is
    wrong — it used to call an error of 1.4e3 "its precision"; a named structure is named (keras' centring)."""
    x, w = torch.randn(2, 8, generator=torch.Generator().manual_seed(7), dtype=torch.float64), torch.ones(8)
    wrong = _call("RMSNorm", x, {"weight": w}, 3 * _rmsnorm(x, w, 1e-6), 8, eps=1e-6)  # every output tripled
    found = diagnosis.diagnose([wrong], None, law_id="RMSNorm.rmsnorm_gradients_pass_gradcheck")
    assert found.text.startswith(diagnosis.NO_MATCH) and "the forward itself is wrong" in found.text, found.text
    assert "precision" not in found.text
    close = _call("RMSNorm", x, {"weight": w}, _rmsnorm(x, w, 1e-6) * (1 + 2.0**-20), 8, eps=1e-6)
    found = diagnosis.diagnose([close], None, law_id="RMSNorm.rmsnorm_gradients_pass_gradcheck")
    assert "its precision, not its backward" in found.text, found.text
    keras = _run("tests.wrappers.keras_centring", "RMSNorm.rmsnorm_gradients_pass_gradcheck", "fp64")
    assert keras.diagnosis.startswith("looks like a centred statistic"), keras.diagnosis


def test_a_failure_only_the_probabilistic_tier_sees_is_diagnosed_on_that_tier():
    """softmax in bf16 inside an fp32 Block: within the deterministic bound, beyond the tier. Judged as the law
    judged it, the call is out of its bound, and a bug gets its line (it used to get none); nor is it dressed as
    narrower arithmetic (an fp32 Block's errors of a bf16 stage are no library's convention)."""
    p = PITFALLS["softmax_in_bf16"]
    result = run_law(LAWS[p.law], load(p.module), dtype=p.dtype, profile="ci")
    assert result.status == "failed" and result.tier == "probabilistic"
    assert result.diagnosis == diagnosis.NO_MATCH, result.diagnosis
