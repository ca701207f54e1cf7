"""Adapter ``onnxruntime``: ONNX Runtime's ``RMSNormalization`` operator (opset 23) — a non-torch kernel, through the
kit's bridge.

The forward runs an ``InferenceSession`` of a one-node ONNX graph on numpy arrays (``kit.bridge``: inputs leave
through DLPack, the result comes back as a tensor). ONNX Runtime has no gradient for an inference session, so
the backward is the analytic VJP written in numpy (fp64, rounded once to the input dtype) — the gradient laws
check that VJP, the forward laws check ONNX Runtime. bf16 has no CPU kernel: "dtype not supported" (skipped).

The operator computes, per the ONNX definition with ``stash_type`` = 1 (fp32, the default):
x → fp32, r = 1/√(mean(x²) + eps), x·r → rounded to the input dtype, then · scale in the input dtype.
Optional: ``pip install 'nanolm-verify[onnx]'``; without onnxruntime every law is skipped with that reason.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import numpy as np

from properties.adapters.kit import bridge, rmsnorm

__all__ = ["CONVENTIONS", "SKIP_REASON", "RMSNorm", "ort_rms_norm", "rms_norm_vjp"]

DTYPES = ("fp64", "fp32", "fp16")  # ONNX Runtime's CPU kernels (no bfloat16 Mul in the expanded function)
CONVENTIONS = {
    "RMSNorm": {
        "formula": "y = fl(fl(x · rsqrt(mean(x²) + eps)) · scale)",
        "rounding": "stash_type fp32: statistics in fp32, x·r rounded to the input dtype, then ·scale (two roundings)",
        "compute": "fp32 statistics (stash_type = 1) for fp16/fp32; ONNX Runtime's double kernel for fp64",
        "compute_dtype": {"fp16": "fp32", "fp32": "fp32"},
        "roundings": 2,
        "dtypes": DTYPES,
        "eps_placement": "inside",
        "weight_mapping": "contract weight ↔ the operator's scale input",
        "backward": "analytic VJP in numpy (fp64), rounded once to the input dtype: ONNX Runtime has no gradient",
        "source": "onnxruntime InferenceSession, ONNX RMSNormalization-23",
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
