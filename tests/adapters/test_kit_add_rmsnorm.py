"""kit.add_rmsnorm: a functional fused add + norm and an in-place one (vLLM / FlashInfer's signature) become contract
components that pass the AddRMSNorm laws without touching the caller's tensors; the numpy bridge carries two outputs
and their cotangents."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nanolm_core.modules import rms_norm
from properties.adapters.kit import add_rmsnorm, bridge
from properties.running.loading import load
from properties.running.runner import LAWS, run_law

EVERY_LAW = [  # (but the ones comparing an accelerator with the CPU: not applicable here)
    law_id for law_id, law in LAWS.items() if law.component == "AddRMSNorm" and "accelerator" not in law.tags
]


def fused_add_rms_norm(x, residual, weight, eps):
    """A functional fused kernel: the norm of the unrounded sum in fp32 (fp64 for fp64), h rounded once."""
    c = torch.float64 if x.dtype == torch.float64 else torch.float32
    s = x.to(c) + residual.to(c)
    return rms_norm(s, weight, eps).to(x.dtype), s.to(x.dtype)


def fused_add_rms_norm_(x, residual, weight, eps):
    """vLLM's in-place contract: residual ← x + residual, x ← RMSNorm(residual); returns None."""
    residual.add_(x)
    x.copy_(rms_norm(residual, weight, eps))


def _module(tmp_path, monkeypatch, text: str, name: str) -> str:
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize("kernel", ["fused_add_rms_norm", "fused_add_rms_norm_"])
def test_a_functional_and_an_in_place_kernel_pass_every_law(tmp_path, monkeypatch, kernel):
    in_place = kernel.endswith("_")
    spec = _module(
        tmp_path,
        monkeypatch,
        f"from tests.adapters.test_kit_add_rmsnorm import {kernel}\n"
        "from properties.adapters.kit import add_rmsnorm\n"
        f"AddRMSNorm = add_rmsnorm({kernel}, in_place={in_place})\n",
        f"my_{kernel.strip('_')}{'_in_place' * in_place}",
    )
    impl = load(spec)
    assert impl.provided == ("AddRMSNorm",)
    for law_id in EVERY_LAW:
        for dtype in (d for d in (torch.float32, torch.bfloat16) if d in LAWS[law_id].dtypes):  # where it applies
            result = run_law(LAWS[law_id], impl, dtype=dtype, profile="ci")
            assert result.status == "passed", f"{law_id} [{dtype}]: {result.message}"


def test_the_in_place_kernel_runs_on_copies():
    seen = {}

    def spy(x, residual, weight, eps):
        seen["x"], seen["residual"] = x, residual
        fused_add_rms_norm_(x, residual, weight, eps)

    module = add_rmsnorm(spy, in_place=True)(4)
    x, r = torch.ones(2, 4), torch.full((2, 4), 2.0)
    y, h = module(x, r)
    assert torch.equal(x, torch.ones(2, 4)) and torch.equal(r, torch.full((2, 4), 2.0))  # the caller's: untouched
    assert seen["x"] is y and seen["residual"] is h and torch.equal(h, torch.full((2, 4), 3.0))


def test_the_kernel_as_given_modifies_the_callers_tensors_and_the_law_sees_it(tmp_path, monkeypatch):
    """Without the kit (the in-place kernel returning its updated arguments), the aliasing law fails with cause law."""
    spec = _module(
        tmp_path,
        monkeypatch,
        "import nanolm_core\n"
        "from tests.adapters.test_kit_add_rmsnorm import fused_add_rms_norm_\n"
        "class AddRMSNorm(nanolm_core.AddRMSNorm):\n"
        "    def forward(self, x, residual):\n"
        "        fused_add_rms_norm_(x, residual, self.weight, self.eps)\n"
        "        return x, residual\n",
        "raw_in_place",
    )
    result = run_law(LAWS["AddRMSNorm.add_rmsnorm_outputs_are_new_tensors"], load(spec), dtype="fp32", profile="ci")
    assert (result.status, result.cause) == ("failed", "law")
    assert "was modified by the call" in result.message


def test_the_bridge_carries_two_outputs_and_their_cotangents():
    def forward(a, b):
        return a + b, a * b

    def vjp(grads, a, b):
        g_sum, g_prod = grads
        return g_sum + g_prod * b, g_sum + g_prod * a

    f = bridge(forward, vjp, name="sum and product")
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([3.0, -1.0], dtype=torch.float64, requires_grad=True)
    s, p = f(a, b)
    torch.autograd.backward((s, p), (torch.ones(2, dtype=torch.float64), torch.full((2,), 2.0, dtype=torch.float64)))
    assert np.array_equal(s.detach().numpy(), [4.0, 1.0]) and np.array_equal(p.detach().numpy(), [3.0, -2.0])
    assert a.grad.tolist() == [7.0, -1.0] and b.grad.tolist() == [3.0, 5.0]
