"""Adapter ``onnxruntime``: ONNX Runtime's ``RMSNormalization`` operator (opset 23) and its fused residual add + norm
``SkipSimplifiedLayerNormalization`` (contrib domain ``com.microsoft``) — non-torch kernels, through the kit's bridge.

The forward runs an ``InferenceSession`` of a one-node ONNX graph on numpy arrays (``kit.bridge``: inputs leave
through DLPack, the result comes back as a tensor). ONNX Runtime has no gradient for an inference session, so
the backward is the analytic VJP written in numpy (fp64, rounded once to the input dtype) — the gradient laws
check that VJP, the forward laws check ONNX Runtime. bf16 has no CPU kernel: "dtype not supported" (skipped).

Measured (docs/adapters.md): for fp16 and fp32 the statistics and both products run in fp32 and round once
(``stash_type`` = 1, the default); fp64 runs in fp64 — but the operator's ``epsilon`` attribute is an ONNX float
(fp32), so eps is stored as fl32(1e-6) = 9.99999997e-7 and eps-dominated fp64 rows are off by up to
½·|fl32(eps) − eps|/eps ≈ 1.3e-9 relatively (1.1e7 ULP of fp64).

AddRMSNorm: ``SkipSimplifiedLayerNormalization(input, skip, gamma)`` returns y and, as its optional fourth output,
the sum input + skip (h). Its CPU kernels are fp32 and fp16 (fp64 is rejected by the operator's schema, bf16
cannot be fed from numpy); the sum is formed in fp32 and the norm reads that unrounded sum (the fused order:
``norm_input: "sum"``), h is stored rounded once. The backward is the analytic VJP in numpy, as for RMSNorm.

Optional: ``pip install 'nanolm-verify[onnx]'``; without onnxruntime every law is skipped with that reason.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import numpy as np

from properties.adapters.kit import add_rmsnorm, bridge, rmsnorm

__all__ = [
    "CONVENTIONS",
    "SKIP_REASON",
    "AddRMSNorm",
    "RMSNorm",
    "add_rms_norm_vjp",
    "ort_add_rms_norm",
    "ort_rms_norm",
    "rms_norm_vjp",
]

DTYPES = ("fp64", "fp32", "fp16")  # ONNX Runtime's CPU kernels (no bfloat16 Mul in the expanded function)
ADD_DTYPES = ("fp32", "fp16")  # SkipSimplifiedLayerNormalization: no fp64 in its schema, no bf16 from numpy
CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = fl(x · rsqrt(mean(x²) + fl32(eps)) · scale)",
        "rounding": "one rounding: statistics and both products in fp32 for fp16/fp32 (stash_type 1), fp64 for fp64",
        "compute": "fp32 for fp16/fp32 input, fp64 for fp64; eps is the operator's float (fp32) attribute",
        "compute_dtype": {"fp64": "fp64", "fp32": "fp32", "fp16": "fp32"},
        "roundings": 1,
        "eps_dtype": "fp32",
        "dtypes": DTYPES,
        "eps_placement": "inside",
        "weight_mapping": "contract weight ↔ the operator's scale input",
        "backward": "analytic VJP in numpy (fp64), rounded once to the input dtype: ONNX Runtime has no gradient",
        "source": "onnxruntime InferenceSession, ONNX RMSNormalization-23",
    },
    "AddRMSNorm": {
        "formula": "h = fl(input + skip); y = fl(s · rsqrt(mean(s²) + fl32(eps)) · gamma), s = input + skip in fp32",
        "rounding": "the sum in fp32, read unrounded by the norm; h and y each rounded once",
        "compute": "fp32 for fp16/fp32 input; eps is the operator's float (fp32) attribute",
        "compute_dtype": {"fp32": "fp32", "fp16": "fp32"},
        "norm_input": "sum",
        "roundings": 1,
        "eps_dtype": "fp32",
        "dtypes": ADD_DTYPES,
        "eps_placement": "inside",
        "weight_mapping": "contract weight ↔ the operator's gamma input; x ↔ input, residual ↔ skip",
        "backward": "analytic VJP in numpy (fp64), rounded once to the input dtype: ONNX Runtime has no gradient",
        "source": "onnxruntime InferenceSession, com.microsoft SkipSimplifiedLayerNormalization-1 (CPU kernel)",
    },
}
SKIP_REASON = (
    None
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx")
    else "onnxruntime and onnx are not installed (pip install 'nanolm-verify[onnx]')"
)


@functools.cache
def _session(dtype: str, eps: float) -> Any:
    import onnxruntime
    from onnx import TensorProto, helper

    kind = {"float64": TensorProto.DOUBLE, "float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}[dtype]
    x, s = helper.make_tensor_value_info("x", kind, ["N", "D"]), helper.make_tensor_value_info("scale", kind, ["D"])
    y = helper.make_tensor_value_info("y", kind, ["N", "D"])
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=eps)
    model = helper.make_model(
        helper.make_graph([node], "rms_norm", [x, s], [y]), opset_imports=[helper.make_opsetid("", 23)]
    )
    model.ir_version = 10
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def ort_rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """ONNX Runtime's RMSNormalization over the last axis of x (numpy in, numpy out)."""
    rows = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
    (y,) = _session(x.dtype.name, float(eps)).run(None, {"x": rows, "scale": np.ascontiguousarray(weight)})
    return y.reshape(x.shape)


def rms_norm_vjp(g: np.ndarray, x: np.ndarray, weight: np.ndarray, eps: float) -> tuple[Any, ...]:
    """(dx, dweight, None): dx = r·(w⊙g) − (r³/D)·x·Σ(g⊙w⊙x), dw = Σ_rows g⊙x·r, in fp64, rounded once."""
    X, W, G = x.astype(np.float64), weight.astype(np.float64), g.astype(np.float64)
    r = 1.0 / np.sqrt((X * X).mean(-1, keepdims=True) + eps)
    dx = r * W * G - r**3 / X.shape[-1] * X * (G * W * X).sum(-1, keepdims=True)
    dw = (G * X * r).reshape(-1, X.shape[-1]).sum(0)
    return dx.astype(x.dtype), dw.astype(weight.dtype), None


RMSNorm = rmsnorm(bridge(ort_rms_norm, rms_norm_vjp, dtypes=DTYPES, name="onnxruntime RMSNormalization"))


@functools.cache
def _skip_session(dtype: str, eps: float) -> Any:
    import onnxruntime
    from onnx import TensorProto, helper

    kind = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}[dtype]
    x, skip = (helper.make_tensor_value_info(n, kind, ["N", "D"]) for n in ("x", "skip"))
    gamma = helper.make_tensor_value_info("gamma", kind, ["D"])
    y, h = (helper.make_tensor_value_info(n, kind, ["N", "D"]) for n in ("y", "h"))
    outputs = ["y", "", "", "h"]  # (output, mean, inv_std_var, input_skip_bias_sum): the sum is the fourth
    node = helper.make_node(
        "SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], outputs, domain="com.microsoft", epsilon=eps
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(helper.make_graph([node], "add_rms_norm", [x, skip, gamma], [y, h]), opset_imports=opsets)
    model.ir_version = 10
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def ort_add_rms_norm(x: np.ndarray, residual: np.ndarray, weight: np.ndarray, eps: float) -> tuple[np.ndarray, ...]:
    """(y, h) of ONNX Runtime's SkipSimplifiedLayerNormalization over the last axis (numpy in, numpy out)."""
    rows = [np.ascontiguousarray(a.reshape(-1, a.shape[-1])) for a in (x, residual)]
    feed = {"x": rows[0], "skip": rows[1], "gamma": np.ascontiguousarray(weight)}
    y, h = _skip_session(x.dtype.name, float(eps)).run(None, feed)
    return y.reshape(x.shape), h.reshape(x.shape)


def add_rms_norm_vjp(
    grads: tuple[np.ndarray, np.ndarray], x: np.ndarray, residual: np.ndarray, weight: np.ndarray, eps: float
) -> tuple[Any, ...]:
    """(d, d, dweight, None): d = dx_RMSNorm(h; g_y) + g_h at h = x + residual (fp64), dw = Σ_rows g_y⊙h·r."""
    g_y, g_h = grads
    H = x.astype(np.float64) + residual.astype(np.float64)
    d_norm, dw, _ = rms_norm_vjp(g_y, H, weight, eps)
    d = d_norm.astype(np.float64) + g_h.astype(np.float64)  # (d_norm rounded to fp64: exact for fp64 H)
    return d.astype(x.dtype), d.astype(residual.dtype), dw, None


AddRMSNorm = add_rmsnorm(
    bridge(ort_add_rms_norm, add_rms_norm_vjp, dtypes=ADD_DTYPES, name="onnxruntime SkipSimplifiedLayerNormalization")
)
