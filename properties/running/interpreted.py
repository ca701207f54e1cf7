"""Triton kernels without a GPU: the Triton interpreter in the worker processes, its gaps bridged here (one place).

Triton ships an interpreter (``TRITON_INTERPRET=1``): a ``@triton.jit`` kernel decorated while the variable is set
runs on CPU tensors, program by program, each ``tl`` operation a numpy operation. A kernel's *logic* — masks and
tails, strides, the grid and its row limits, what each program reads and writes, dtype conversions, the
accumulation dtype, the tensors a backward saves — is executed as written, so the laws judge it as they judge any
implementation. What the interpreter cannot show is listed in docs/adapters.md ("Triton kernels, interpreted").

**Where it runs.** Only in the workers (:mod:`properties.running.workers`): the verifier chooses the mode
(:func:`choose`, from ``--triton auto|interpret|compiled``) and hands the workers their variables
(:func:`worker_environ`); a worker calls :func:`prepare` after installing that environment and before importing
the implementation, so ``TRITON_INTERPRET`` is set before Triton is imported there (the fork server never imports
it) and the bridges below are installed into that worker's Triton only. The verifier's process — the user's — never
sets the variable and never imports Triton for this.

**The bridges** (each tested on its own against numpy: ``tests/adapters/test_triton_interpreter.py``):

* :func:`scalar` — a Python ``float`` kernel argument. Compiled Triton specializes it to an fp32 scalar
  (``mangle_type(1e-6) == "fp32"``); the interpreter's ``_implicit_cvt`` wraps ints and pointers but leaves a
  float a float, so ``eps.to(tl.float32)`` raises. The bridge wraps it as the fp32 scalar the compiler passes.
* :data:`LIBDEVICE` — ``triton.language.extra.libdevice`` functions (``rsqrt``, ``exp``, ``tanh`` …). Compiled,
  the stub module's calls are replaced by CUDA libdevice (``__nv_rsqrtf`` …); interpreted, a stub returns
  ``None`` and the CUDA module's ``extern_elementwise`` raises "not supported in interpreter mode"
  (triton-lang/triton#10366). The bridge binds each stub a kernel uses to the CUDA module's definition (its dtype
  dispatch: which symbol for fp32, which for fp64) and evaluates the symbol with numpy in long double, rounded
  once to the result dtype — within the maximum ulp error CUDA documents for that libdevice function
  (``Libdevice.ulps``), which the tests check; a symbol not in the table raises naming it. The bridge is *more*
  accurate than the GPU's libdevice (≤ 0.5 ulp where CUDA allows 1–2): a kernel whose result depends on
  libdevice's own rounding can pass interpreted and differ compiled (docs/adapters.md).
* :func:`_bridge_bf16` — bf16 arithmetic. The interpreter keeps bf16 as raw bits (numpy has no bf16) and applies
  numpy's ``+``, ``×`` … to the bits: ``x + r`` of two bf16 tensors gives garbage (1e36 where 0.47 belongs). The
  bridge computes each bf16 operation on the values in fp32 and rounds once to bf16 (correctly rounded). Casts
  to bf16 round to nearest even (:func:`bf16_bits`): the interpreter's own truncates (fp32 → bf16, off by up to an
  ulp) or reinterprets numbers as bits (fp64 → bf16).
* :func:`no_clock` — ``triton.autotune``: there is no clock to tune against (the interpreter's timings say nothing
  of a GPU's, and ``do_bench`` needs a GPU driver). Every config times the same, so the autotuner keeps its
  *first* config — compiled, it keeps the fastest: the block sizes a run exercises can differ (docs/adapters.md).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # light at import: the command line's parser reads MODES (numpy comes when used)
    import numpy as np

__all__ = [
    "ENV",
    "LIBDEVICE",
    "MODES",
    "Libdevice",
    "choose",
    "describe",
    "install",
    "interpreting",
    "prepare",
    "scalar",
    "uses_triton",
    "worker_environ",
]

MODES = ("auto", "interpret", "compiled")
ENV = "NANOLM_TRITON"  # the mode the verifier chose, as the workers see it ("interpret" or "compiled")
INTERPRET = "TRITON_INTERPRET"


# ------------------------------------------------------------------------------------------- the verifier's side


def triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def choose(mode: str, *, cuda: bool, installed: bool, environ: Mapping[str, str] = os.environ) -> str:
    """The mode a run's workers get: "interpret", "compiled" or "" (no Triton: nothing to choose).

    ``auto``: interpreted where there is no CUDA device (or the user's environment already says
    ``TRITON_INTERPRET=1``), compiled where there is one. ``interpret`` / ``compiled``: as named (compiled without
    CUDA: the kernels fail to launch, a result about them)."""
    if mode not in MODES:
        raise ValueError(f"--triton must be one of {', '.join(MODES)}, not {mode!r}")
    if not installed:
        return ""
    if mode == "auto":
        return "interpret" if environ.get(INTERPRET) == "1" or not cuda else "compiled"
    return mode


def worker_environ(chosen: str) -> dict[str, str]:
    """The variables a worker's environment gets for the chosen mode (the verifier's own is never changed)."""
    if not chosen:
        return {}
    return {ENV: chosen, INTERPRET: "1" if chosen == "interpret" else "0"}


INTERPRETED = "Triton kernels interpreted"  # how describe() begins for interpreted kernels


# ---------------------------------------------------------------------------------------------- the worker's side


def interpreting() -> bool:
    """In a worker: are Triton kernels interpreted here?"""
    return os.environ.get(INTERPRET) == "1" and triton_installed()


def prepare() -> None:
    """In a worker, before the implementation is imported: the bridges, when kernels are interpreted here."""
    if interpreting():
        install()


def uses_triton(module: ModuleType) -> bool:
    """Does the implementation run Triton kernels? It says so (``TRITON_KERNELS = True``: the adapters, whose library
    is imported lazily) or its module holds Triton: ``import triton`` / ``triton.language``, or a jit kernel."""
    if getattr(module, "TRITON_KERNELS", False) is True:
        return True
    if "triton" not in sys.modules:
        return False
    kernel = sys.modules["triton"].runtime.jit.KernelInterface
    for value in list(vars(module).values()):
        if isinstance(value, ModuleType) and value.__name__.split(".", 1)[0] == "triton":
            return True
        if isinstance(value, kernel):
            return True
    return False


def describe(module: ModuleType) -> str:
    """How the implementation's Triton kernels run, for the report ("" when it has none)."""
    if not uses_triton(module):
        return ""
    if interpreting():
        return (
            f"{INTERPRETED} (TRITON_INTERPRET=1 in the workers: numpy on the CPU, program by program; "
            "fidelity: docs/adapters.md)"
        )
    return "Triton kernels compiled"


# ------------------------------------------------------------------------------------------------------- bridges


@dataclasses.dataclass(frozen=True)
class Libdevice:
    """One libdevice symbol: the numpy function that evaluates it and the maximum ulp error CUDA documents for it
    (the CUDA C++ Programming Guide, "Mathematical Functions": single and double precision tables)."""

    name: str  # rsqrt, sqrt, exp … (numpy's function of that name; rsqrt is 1 / sqrt, erf is math.erf)
    ulps: float

    def __call__(self, *args: np.ndarray) -> np.ndarray:
        """Evaluated in numpy's long double (x87's 64-bit significand where the platform has it, else fp64), rounded
        once to the result dtype by the caller: within 0.5 ulp + a hair of fp32 and of fp64 results; erf in fp64
        (math.erf)."""
        import math

        import numpy as np

        if self.name == "erf":
            return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(args[0], dtype=np.float64))
        wide = [np.asarray(a, dtype=np.longdouble) for a in args]
        return 1.0 / np.sqrt(wide[0]) if self.name == "rsqrt" else getattr(np, self.name)(*wide)


# name → the maximum ulp error CUDA documents for its fp32 and its fp64 function
_MATH = {
    "rsqrt": (2, 1), "sqrt": (0, 0), "exp": (2, 1), "exp2": (2, 1), "log": (1, 1), "log2": (1, 1), "tanh": (2, 1),
    "erf": (2, 2), "sin": (2, 2), "cos": (2, 2),
}  # fmt: skip
# symbol → bridge: __nv_<f>f is the fp32 function, __nv_<f> the fp64 one (ulps: the documented maximum of each)
LIBDEVICE: dict[str, Libdevice] = {
    **{f"__nv_{name}f": Libdevice(name, single) for name, (single, _) in _MATH.items()},
    **{f"__nv_{name}": Libdevice(name, double) for name, (_, double) in _MATH.items()},
}


def scalar(arg: Any) -> Any:
    """A kernel argument as compiled Triton passes it: a Python float becomes an fp32 scalar (None: not a float)."""
    if isinstance(arg, float):
        import numpy as np
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        return tl.tensor(TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
    return None


def _extern_elementwise(self: Any, lib_name: str, lib_path: str, symbol: str, args: list, ret: Any, pure: bool) -> Any:
    import numpy as np
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype

    bridge = LIBDEVICE.get(symbol)
    if bridge is None:
        raise NotImplementedError(
            f"libdevice {symbol} has no bridge under the Triton interpreter (properties/running/interpreted.py: "
            f"LIBDEVICE names {', '.join(sorted(LIBDEVICE))})"
        )
    element = getattr(ret, "scalar", ret)  # a block's element type
    out = bridge(*(a.data for a in args))
    return TensorHandle(np.asarray(out).astype(_get_np_dtype(element)), element)


def _bridged_libdevice() -> dict[Any, Any]:
    """Each stub of ``triton.language.extra.libdevice`` → a function calling the CUDA module's definition with the
    interpreter's semantic (its dtype dispatch), evaluated by ``_extern_elementwise``."""
    import triton.language.extra.cuda.libdevice as cuda
    import triton.language.extra.libdevice as stub
    from triton.runtime import interpreter

    out = {}
    for name, fn in vars(stub).items():
        target = getattr(cuda, name, None)
        if callable(fn) and getattr(fn, "__module__", "") == stub.__name__ and target is not None:

            def call(*args: Any, _target: Any = target) -> Any:
                return _target(*args, _semantic=interpreter.interpreter_semantic)

            out[fn] = call
            out[target] = call  # `from triton.language.extra.cuda.libdevice import rsqrt` (NGC containers)
    return out


def no_clock(kernel_call: Callable[[], None], quantiles: Any = None, **_: Any) -> list[float]:
    """The autotuner's benchmarker under the interpreter: no run, the same time for every config (first wins)."""
    return [0.0, 0.0, 0.0] if quantiles else 0.0


_COMPARISONS = ("less", "greater", "less_equal", "greater_equal", "equal", "not_equal")  # numpy ufuncs' names


def _bridge_bf16(builder: type, tl: Any) -> None:
    """bf16 arithmetic: the interpreter stores bf16 as its raw bits (uint16) and applies numpy's operators to the
    bits. Each operation on bf16 operands is done on their values in fp32 and rounded to bf16 (RNE) — the correctly
    rounded bf16 result for +, −, ×, ÷ (fp32's 24 bits ≥ 2·8 + 2: the double rounding is innocuous), what compiled
    Triton's bf16 arithmetic gives; comparisons compare the values."""
    binary, unary, fma = builder.binary_op, builder.unary_op, builder.create_fma

    def is_bf16(*handles: Any) -> bool:
        return any(h.dtype.scalar == tl.bfloat16 for h in handles)

    def wide(self: Any, h: Any) -> Any:
        return self.cast_impl(h, tl.float32) if h.dtype.scalar == tl.bfloat16 else h

    def binary_op(self: Any, lhs: Any, rhs: Any, op: Any) -> Any:
        if not is_bf16(lhs, rhs):
            return binary(self, lhs, rhs, op)
        out = binary(self, wide(self, lhs), wide(self, rhs), op)
        return out if getattr(op, "__name__", "") in _COMPARISONS else self.cast_impl(out, tl.bfloat16)

    def unary_op(self: Any, arg: Any, op: Any) -> Any:
        if not is_bf16(arg):
            return unary(self, arg, op)
        return self.cast_impl(unary(self, wide(self, arg), op), tl.bfloat16)

    def create_fma(self: Any, x: Any, y: Any, z: Any) -> Any:
        if not is_bf16(x, y, z):
            return fma(self, x, y, z)
        return self.cast_impl(fma(self, wide(self, x), wide(self, y), wide(self, z)), tl.bfloat16)

    builder.binary_op, builder.unary_op, builder.create_fma = binary_op, unary_op, create_fma
    cast, fp_to_fp = builder.cast_impl, builder.create_fp_to_fp

    def cast_impl(self: Any, src: Any, dst_type: Any) -> Any:
        source, target = src.dtype.scalar, dst_type.scalar
        if (
            tl.bfloat16 not in (source, target)
            or source == target
            or not (source.is_floating() and target.is_floating())
        ):
            return cast(self, src, dst_type)
        values = bf16_values(src.data) if source == tl.bfloat16 else src.data
        if target == tl.bfloat16:
            return type(src)(bf16_bits(values), tl.bfloat16)
        return type(src)(values.astype({"fp16": "float16", "fp32": "float32", "fp64": "float64"}[target.name]), target)

    def create_fp_to_fp(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        if tl.bfloat16 in (src.dtype.scalar, dst_type.scalar):
            return cast_impl(self, src, dst_type)  # round to nearest even, as compiled Triton's default
        return fp_to_fp(self, src, dst_type, rounding_mode)

    builder.cast_impl, builder.create_fp_to_fp = cast_impl, create_fp_to_fp
    builder.create_fp_ext = lambda self, src, dst_type: self.cast_impl(src, dst_type)
    builder.create_fp_trunc = lambda self, src, dst_type: self.cast_impl(src, dst_type)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    """bf16 raw bits (uint16) → their values (fp32, exact)."""
    import numpy as np

    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """Values (any float dtype) → bf16 raw bits, rounded once to nearest, ties to even (subnormals, overflow to ±inf,
    NaN kept): what compiled Triton's ``.to(tl.bfloat16)`` gives. The interpreter's own cast truncates."""
    import numpy as np

    x = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        _, e = np.frexp(x)  # |x| = m · 2^e, m ∈ [0.5, 1)
        quantum = np.ldexp(1.0, np.maximum(e - 8, -133))  # bf16: 8 significant bits; subnormal quantum 2^-133
        y = np.where(np.isfinite(x), np.round(x / quantum) * quantum, x)
        y = np.where(np.abs(y) >= 2.0**128, np.copysign(np.inf, x), y)
    return (y.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def _bridge(bridged: dict[Any, Any], value: Any) -> Any:
    try:
        return bridged.get(value)
    except TypeError:  # an unhashable global
        return None


_INSTALLED: list[bool] = []


def install() -> None:
    """Install the bridges into this process's Triton (a worker's; idempotent)."""
    if _INSTALLED:
        return
    import triton.language as tl
    from triton.runtime import autotuner, interpreter

    implicit = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        wrapped = scalar(arg)
        return implicit(arg) if wrapped is None else wrapped

    interpreter._implicit_cvt = implicit_cvt
    interpreter.InterpreterBuilder.create_extern_elementwise = _extern_elementwise

    bridged = _bridged_libdevice()
    import triton.language.extra.libdevice as stub

    for fn, replacement in bridged.items():  # `libdevice.rsqrt(x)` and every import from now on
        if getattr(stub, fn.__name__, None) is fn:
            setattr(stub, fn.__name__, replacement)
    patch_lang = interpreter._patch_lang

    launch: list[set[int]] = []  # the languages patched by the launch in progress (GridExecutor.__call__)

    def patch_with_libdevice(fn: Any) -> Any:
        for name, value in list(fn.__globals__.items()):  # a name bound before the bridges were installed
            if callable(value) and not isinstance(value, type) and _bridge(bridged, value) is not None:
                fn.__globals__[name] = bridged[value]
        langs = {id(v) for v in fn.__globals__.values() if v is tl or v is tl.core}
        if launch and langs <= launch[-1]:  # a device function called inside a launch: already patched
            return interpreter._LangPatchScope()
        if launch:
            launch[-1].update(langs)
        return patch_lang(fn)

    grid_call = interpreter.GridExecutor.__call__

    def launch_kernel(self: Any, *args: Any, **kwargs: Any) -> Any:
        launch.append(set())
        try:
            return grid_call(self, *args, **kwargs)
        finally:
            launch.pop()

    interpreter._patch_lang = patch_with_libdevice
    _bridge_bf16(interpreter.InterpreterBuilder, tl)
    interpreter.GridExecutor.__call__ = launch_kernel
    autotuner.Autotuner.do_bench = property(lambda self: no_clock)
    _INSTALLED.append(True)
