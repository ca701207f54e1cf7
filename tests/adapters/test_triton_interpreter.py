"""The Triton interpreter's bridges (properties/running/interpreted.py), each on its own against numpy, and where
they run: only in a worker-like process of their own, never in this one.

The kernels run in ``python -m tests.adapters.triton_bridges`` (TRITON_INTERPRET=1 set before Triton is imported,
bridges installed by ``interpreted.prepare``); this process compares what they computed with numpy. Skipped, with
the reason, where Triton is not installed (``tox -e triton`` installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from properties.running import interpreted

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.triton  # the interpreted tier (tox -e triton); skipped with the reason without Triton
triton_installed = pytest.mark.skipif(not interpreted.triton_installed(), reason="triton is not installed")


@pytest.fixture(scope="module")
def ran() -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("TRITON_INTERPRET", None)
    out = subprocess.run(
        [sys.executable, "-m", "tests.adapters.triton_bridges"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def _ulps(actual: np.ndarray, exact: np.ndarray, dtype: type) -> np.ndarray:
    """|actual − exact| in ulps of dtype at the exact value (exact in fp64; fp64 results: against long double)."""
    spacing = np.spacing(np.abs(exact).astype(dtype)).astype(np.longdouble)
    return np.abs(actual.astype(np.longdouble) - exact.astype(np.longdouble)) / spacing


@triton_installed
def test_a_float_argument_is_the_fp32_scalar_compiled_triton_passes(ran):
    # 0 + eps.to(fp32) with eps = 0.1: fp32(0.1) exactly (the float, not 0.1 in fp64), no AttributeError
    assert ran["scalar"] == [float(np.float32(0.1))] * 5
    assert float(np.float32(0.1)) != 0.1


@triton_installed
@pytest.mark.parametrize("dtype", ["torch.float32", "torch.float64"])
@pytest.mark.parametrize("name", ["rsqrt", "sqrt", "exp", "exp2", "log", "log2", "tanh", "erf", "sin", "cos"])
def test_libdevice_bridge_is_within_the_documented_ulps(ran, name, dtype):
    np_dtype = np.float32 if dtype == "torch.float32" else np.float64
    xs, ys = (np.asarray(v, dtype=np_dtype) for v in ran[f"{name}-{dtype}"])
    exact = {
        "rsqrt": lambda a: 1 / np.sqrt(a), "sqrt": np.sqrt, "exp": np.exp, "exp2": np.exp2, "log": np.log,
        "log2": np.log2, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
        "erf": np.vectorize(__import__("math").erf),
    }[name](xs.astype(np.longdouble) if name != "erf" else xs.astype(np.float64))  # fmt: skip
    symbol = f"__nv_{name}f" if np_dtype is np.float32 else f"__nv_{name}"
    documented = interpreted.LIBDEVICE[symbol].ulps
    err = _ulps(ys, np.asarray(exact, dtype=np.longdouble), np_dtype)
    # fp64 evaluation rounded once: ≤ 0.5 ulp (+ numpy's own fp64 error) for fp32, well inside CUDA's bound
    allowed = documented or 0.5 + 1e-3  # 0: correctly rounded (IEEE sqrt)
    assert err.max() <= allowed, f"{symbol}: {err.max():.2f} ulp > documented {documented}"
    if np_dtype is np.float32:
        assert err.max() <= 0.5 + 1e-3, f"{symbol}: {err.max():.3f} ulp, not rounded once from fp64"


@triton_installed
def test_a_libdevice_name_bound_before_the_bridges_is_bridged_at_launch(ran):
    xs, ys = (np.asarray(v, dtype=np.float32) for v in ran["early"])
    assert np.array_equal(ys, (1 / np.sqrt(xs.astype(np.float64))).astype(np.float32))


def _bf16_rne(values: np.ndarray) -> np.ndarray:
    """fp32 values → bf16 (as fp32), round to nearest even, by numpy's bits (finite inputs)."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


@triton_installed
def test_bf16_arithmetic_and_casts_round_to_nearest_even(ran):
    a, b, total, cast, cast64 = (np.asarray(v, dtype=np.float32) for v in ran["bf16"])
    assert np.array_equal(total, _bf16_rne(a + b))  # a + b is exact in fp32: one rounding to bf16
    wide = a * np.float32(1.01171875)
    assert np.array_equal(cast, _bf16_rne(wide)), "fp32 → bf16 must round to nearest even (the interpreter truncates)"
    assert np.array_equal(cast64, _bf16_rne(wide))
    truncated = (wide.view(np.uint32) >> 16 << 16).view(np.float32)
    assert not np.array_equal(_bf16_rne(wide), truncated), "no rounding up was exercised"


@triton_installed
def test_autotuning_keeps_the_first_config_without_timing(ran):
    assert ran["autotune"] == [1]


@triton_installed
def test_a_libdevice_symbol_without_a_bridge_raises_naming_it(ran):
    assert "__nv_j0f has no bridge" in ran["unknown"]


def test_the_mode_is_chosen_in_the_verifier_and_set_in_the_workers_only():
    choose = interpreted.choose
    assert choose("auto", cuda=False, installed=True, environ={}) == "interpret"
    assert choose("auto", cuda=True, installed=True, environ={}) == "compiled"
    assert choose("auto", cuda=True, installed=True, environ={"TRITON_INTERPRET": "1"}) == "interpret"
    assert choose("compiled", cuda=False, installed=True, environ={}) == "compiled"
    assert choose("interpret", cuda=True, installed=False, environ={}) == ""
    with pytest.raises(ValueError, match="--triton"):
        choose("emulate", cuda=False, installed=True)
    assert interpreted.worker_environ("interpret") == {"NANOLM_TRITON": "interpret", "TRITON_INTERPRET": "1"}
    assert interpreted.worker_environ("compiled")["TRITON_INTERPRET"] == "0"
    assert interpreted.worker_environ("") == {}


@triton_installed
def test_a_check_interprets_in_its_workers_and_leaves_this_process_alone(tmp_path):
    from properties.running import session

    before = dict(os.environ)
    selection = session.Selection(profile="ci", dtypes=("fp32",), only=("RMSNorm.rmsnorm_matches_golden",))
    run = session.run(["properties.gallery.triton_rmsnorm"], selection, session.RunOptions.of("ci", workers=1))
    assert [r.status for r in run.results] == ["passed"], run.results[0].message
    assert run.subjects[0].info.kernels.startswith("Triton kernels interpreted")
    assert dict(os.environ) == before
    if "triton.runtime.interpreter" in sys.modules:  # this process's Triton was never bridged
        assert not interpreted._INSTALLED


def test_a_module_without_triton_reports_no_kernels():
    import nanolm_core

    assert interpreted.describe(nanolm_core) == ""
