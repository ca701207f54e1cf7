"""The subject in a process of its own, seen from the judge (properties.library.remote over
properties.running.subject_server): every module step a law takes reaches the subject's module, and what the
subject does to its inputs, parameters, gradients and outputs comes back as data the laws judge."""

from __future__ import annotations

import copy
import pickle
import textwrap
from pathlib import Path

import pytest
import torch

from properties.library import harness, remote, state
from properties.library.context import ContractFailure
from properties.running.loading import load
from properties.running.subject_server import Subject

BASE = "import torch\nimport nanolm_core\n"


@pytest.fixture
def subject(tmp_path):
    """subject(source) → the judge's Implementation of a module with that source (after BASE), in its process."""
    started = []

    def start(source: str = "from nanolm_core import RMSNorm, SwiGLU, Block, AddRMSNorm\n"):
        path = tmp_path / f"impl_{len(started)}.py"
        path.write_text(BASE + textwrap.dedent(source))
        started.append(Subject(str(path)))
        return started[-1].implementation()

    yield start
    for s in started:
        s.close()


def _rmsnorm(impl, d=8):
    return impl.factory("RMSNorm")(d, eps=1e-6).to(dtype=torch.float32)


def test_forward_and_gradients_are_the_reference_s_bit_for_bit(subject):
    remote_, local = _rmsnorm(subject()), _rmsnorm(load("nanolm_core"))
    with torch.no_grad():
        for m in (remote_, local):
            m.weight.copy_(torch.linspace(-1, 2, 8))
    x, g = torch.randn(3, 8), torch.randn(3, 8)
    got, want = [], []
    for m, out in ((remote_, got), (local, want)):
        xg = x.clone().requires_grad_(True)
        y = m(xg)
        out += [y.detach(), *torch.autograd.grad(y, [xg, m.weight], g)]
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    assert type(got[0]) is torch.Tensor and not remote_.weight.grad


def test_module_steps_reach_the_subject_s_module(subject):
    m, x = _rmsnorm(subject()), torch.randn(2, 8)
    y0 = m(x)
    m.load_state_dict({"weight": torch.full((8,), 2.0)})
    assert torch.allclose(m(x), 2 * y0 / m.weight.new_ones(8) / 1.0 * 1.0) and torch.equal(
        m.weight, torch.full((8,), 2.0)
    )
    with torch.no_grad():
        m.weight.copy_(torch.full((8,), 3.0))  # an optimizer-style in-place update
    assert torch.allclose(m(x), 3 * y0)
    assert torch.allclose(torch.func.functional_call(m, {"weight": torch.ones(8)}, (x,)), y0)  # for one call only
    assert torch.allclose(m(x), 3 * y0)
    m.to(dtype=torch.float64)
    assert m.weight.dtype == torch.float64 and m(x.double()).dtype == torch.float64
    m.train()
    assert m.training and all(c.training for c in m.modules())
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):  # copies made in the subject's process
        assert isinstance(twin, remote.RemoteModule) and torch.equal(twin(x.double()), m(x.double()))


def test_tied_and_frozen_parameters_are_the_subject_s_too(subject):
    impl = subject()
    owner, twin, x = _rmsnorm(impl), _rmsnorm(impl), torch.randn(2, 8)
    with torch.no_grad():
        owner.weight.fill_(5.0)
    twin.weight = owner.weight  # tied by assignment: the twin computes with the owner's γ, now and later
    assert torch.allclose(twin(x), owner(x))
    with torch.no_grad():
        owner.weight.fill_(7.0)
    owner(x)
    assert torch.allclose(twin(x), owner(x))
    twin.weight.requires_grad_(False)
    xg = x.clone().requires_grad_(True)
    assert twin(xg).requires_grad  # through x only
    assert not owner(x).requires_grad  # the same Parameter, frozen: nothing of the owner's output needs a gradient


def test_what_the_subject_does_to_inputs_grads_and_outputs_comes_back(subject):
    impl = subject(
        """
        class RMSNorm(nanolm_core.RMSNorm):
            buffer = None

            def forward(self, x):
                if torch.is_grad_enabled():
                    self.weight.grad = None  # resets the accumulated gradient
                y = super().forward(x)
                if x.shape[0] == 3:
                    x.data.mul_(2)  # writes into its input, behind autograd's back
                if x.shape[0] == 4:
                    if RMSNorm.buffer is None:
                        RMSNorm.buffer = torch.empty_like(y)
                    RMSNorm.buffer.copy_(y)  # every output in one buffer
                    return RMSNorm.buffer
                return y
        """
    )
    m = _rmsnorm(impl)
    x = torch.ones(3, 8)
    m(x)
    assert torch.equal(x, torch.full((3, 8), 2.0))  # the law sees the write in its own tensor
    m(torch.randn(2, 8)).sum().backward()
    assert m.weight.grad is not None
    m(torch.randn(2, 8))  # the subject's forward cleared it: so does the judge's mirror
    assert m.weight.grad is None
    first = m(torch.randn(4, 8))
    kept = first.clone()
    second = m(torch.randn(4, 8))
    assert remote.span(first) == remote.span(second)  # the same memory, as the subject reports it
    remote.reread([first])
    assert not torch.equal(first, kept) and torch.equal(first, second)


def test_a_subclass_output_is_a_contract_failure_and_a_changed_setting_is_reported(subject):
    impl = subject(
        """
        class Liar(torch.Tensor):
            pass

        class RMSNorm(nanolm_core.RMSNorm):
            def forward(self, x):
                torch.set_num_threads(torch.get_num_threads() + 1)
                return super().forward(x).as_subclass(Liar)
        """
    )
    m, mark = _rmsnorm(impl), state.reported()
    with pytest.raises(ContractFailure, match="a Liar \\(a torch.Tensor subclass\\)"):
        m(torch.randn(2, 8))
    assert any(c.startswith("torch threads") for c in state.reported(mark))


def test_meta_construction_sends_shapes_only(subject):
    import nanolm_core

    config = nanolm_core.ModelConfig(dim=4096, n_heads=32, n_kv_heads=8, ffn_dim=14336)  # crosses as its fields
    with torch.device("meta"):
        block = subject().factory("Block")(config)
    w = dict(block.named_parameters())["ffn.w_gate.weight"]
    assert w.device.type == "meta" and tuple(w.shape) == (14336, 4096)


def test_the_judge_never_imports_the_subject(subject, tmp_path):
    import sys

    impl = subject("from nanolm_core import RMSNorm\nMARK = 1\n")
    assert not [n for n in sys.modules if Path(getattr(sys.modules[n], "__file__", "") or "").parent == tmp_path]
    assert impl.provided == ("RMSNorm",) and not hasattr(impl.module, "MARK")


_STEPS = {  # a subject whose build fails at one step, and how
    "construct raises": "def __init__(self, *a, **k):\n    raise ValueError('no sizes like these')",
    "construct is not a module": None,
    "construct changes a setting": "def __init__(self, *a, **k):\n    super().__init__(*a, **k)\n"
    "    torch.set_flush_denormal(True)",
    ".to raises": "def to(self, *a, **k):\n    raise RuntimeError('stays where it is')",
    ".to gives another module": "def to(self, *a, **k):\n    return nanolm_core.RMSNorm(8)",
    "load raises a stub": "def load_state_dict(self, *a, **k):\n    raise NotImplementedError('exercise')",
    "load refuses the keys": "def __init__(self, *a, **k):\n    super().__init__(*a, **k)\n"
    "    self.gain = self.weight\n    del self.weight",
    "load changes a setting": "def load_state_dict(self, *a, **k):\n    torch.set_num_threads(3)\n"
    "    return super().load_state_dict(*a, **k)",
    "eval raises": "def train(self, mode=True):\n    if not mode:\n        raise TypeError('always training')\n"
    "    return super().train(mode)",
    "nothing fails": "pass",
}


def _source(body: str | None) -> str:
    if body is None:
        return "def RMSNorm(*a, **k):\n    return 'a norm'\n"
    return "class RMSNorm(nanolm_core.RMSNorm):\n" + textwrap.indent(body, "    ") + "\n"


def _built(impl):
    """harness.build of RMSNorm(8, eps=0) in fp64 with a weight: what the law sees of the module, or the exception
    (class, first line); the global settings the subject reported changed; the requests the build took."""
    mark, link = state.reported(), impl.factory("RMSNorm").link
    before = link.traffic[0]
    try:
        m = harness.build(impl, "RMSNorm", (8,), {"eps": 0.0}, {"weight": torch.full((8,), 2.0)}, torch.float64, "cpu")
    except BaseException as exc:  # what the law would see
        return (type(exc).__name__, str(exc).splitlines()[0]), state.reported(mark), link.traffic[0] - before
    requests = link.traffic[0] - before
    out = (m.weight.dtype, m.weight.tolist(), m.training, m(torch.ones(1, 8, dtype=torch.float64)).tolist())
    return out, state.reported(mark), requests


@pytest.mark.parametrize("case", list(_STEPS))
def test_a_build_is_one_request_that_fails_at_the_step_its_steps_one_by_one_fail_at(case, subject, monkeypatch):
    """harness.build of a module of the subject's process sends one request (remote.Build) and ends as taking the
    steps one request each (the subject's factory, .to, load_state_dict, eval through RemoteModule) ends: the same
    module, or the same exception naming the same step, and the same settings reported changed."""
    impl = subject(_source(_STEPS[case]))
    merged, changed, requests = _built(impl)
    monkeypatch.setattr(remote, "Build", harness._Steps)
    one_by_one = _built(impl)
    assert (merged, changed) == one_by_one[:2] and requests == 1 <= one_by_one[2]
    if case == "nothing fails":
        assert merged == (torch.float64, [2.0] * 8, False, [[2.0] * 8]) and one_by_one[2] == 4
    else:  # eval is the one step the harness does not guard
        assert merged[0] in (("TypeError",) if case == "eval raises" else ("ContractFailure", "StubNotImplemented"))
