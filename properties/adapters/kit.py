"""A kit for wrapping real kernels to the contract (the shipped adapters are built from it, and so can yours).

Functional adapters — a module of a few lines makes a kernel function a contract component::

    from mykernels import rms_norm                      # def rms_norm(x, weight, eps) -> y
    from properties.adapters.kit import rmsnorm
    RMSNorm = rmsnorm(rms_norm)

``swiglu(fn)`` wraps ``fn(x, w_gate, w_up, w_down)`` (``nn.Linear`` layouts: (F, D), (F, D), (D, F)),
``block(fn)`` wraps ``fn(x, params, config)`` with ``params`` the contract's state-dict names → live parameters, and
``add_rmsnorm(fn)`` wraps ``fn(x, residual, weight, eps)`` returning (y, h) — or, ``in_place=True``, a kernel that
updates its arguments as vLLM's and FlashInfer's ``fused_add_rms_norm`` do (x ← y, residual ← x + residual): the kit
hands it copies and returns them, so the caller's tensors are never modified.
The classes hold the contract's parameters (subclasses of the reference, so names, shapes and init are the
contract's) and pass them to ``fn`` at every call; gradients flow back through whatever ``fn`` does in torch.

Name maps and fused weights — ``library_params(module, {"gate_up_proj.weight": Fuse("w_gate.weight",
"w_up.weight"), "down_proj.weight": "w_down.weight"})`` gives a library's parameter names → the contract's tensors
(concatenated, differentiably, where the library fuses them); ``to_contract`` splits a library state dict back.

RoPE layouts — ``permute_rope(w, n_heads, to="interleaved")`` reorders the rows of W_q / W_k so that a kernel
applying RoPE to interleaved pairs (2j, 2j+1) computes exactly the contract's rotate-half attention (pairs
(j, j + K/2)); ``to="rotate-half"`` is the inverse (Meta → HF checkpoint conversion).

Non-torch code — ``bridge(forward, vjp=None)`` runs a function on numpy / DLPack arrays inside a
``torch.autograd.Function``: inputs leave through DLPack (bf16 through ``ml_dtypes`` when installed), the result
comes back the same way; ``vjp(grad_out, *inputs)`` gives the backward, and without one the backward raises
``NotImplementedError`` (the gradient laws are then skipped as "not implemented"), and so does a double backward
(``create_graph=True``: the vjp's arrays carry no graph; the second-order laws are skipped). A ``forward`` that
returns a tuple of arrays has several outputs; its ``vjp`` then receives the tuple of their cotangents as ``grad_out``.

Dtypes — raise :class:`DtypeNotSupported` (or pass ``dtypes=`` to the wrappers) for a dtype the kernel does not
support: the law is skipped with reason "dtype not supported", distinct from an exercise stub's
``NotImplementedError``. Declare the same in ``CONVENTIONS[component]["dtypes"]``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

import nanolm_core
from golden.formats import fmt

__all__ = [
    "DtypeNotSupported",
    "Fuse",
    "add_rmsnorm",
    "block",
    "bridge",
    "from_array",
    "library_params",
    "offset_weight",
    "permute_rope",
    "require_dtype",
    "rmsnorm",
    "rope_permutation",
    "swiglu",
    "to_array",
    "to_contract",
]


class DtypeNotSupported(Exception):
    """The implementation does not support this dtype: the law is skipped with this reason (never a failure)."""


def require_dtype(dtype: torch.dtype, supported: Iterable[str | torch.dtype] | None, what: str) -> None:
    """DtypeNotSupported unless ``dtype`` is among ``supported`` (None: every dtype)."""
    if supported is None:
        return
    names = [fmt(d).name for d in supported]
    if fmt(dtype).name not in names:
        raise DtypeNotSupported(f"{what} supports {', '.join(names)}, not {fmt(dtype).name}")


def _named(cls: type, fn: Callable[..., Any], component: str) -> type:
    cls.__name__ = cls.__qualname__ = component
    cls.__module__ = getattr(fn, "__module__", cls.__module__)
    return cls


# ---------------------------------------------------------------------------------------------- functional adapters


def rmsnorm(fn: Callable[..., torch.Tensor], *, dtypes: Iterable[str] | None = None) -> type[nn.Module]:
    """Contract ``RMSNorm`` calling ``fn(x, weight, eps)`` (weight: the contract's parameter, eps: a float)."""
    supported = tuple(dtypes) if dtypes is not None else None

    class RMSNorm(nanolm_core.RMSNorm):
        __doc__ = f"RMSNorm(dim, eps) running {getattr(fn, '__qualname__', fn)}(x, weight, eps)."

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            require_dtype(x.dtype, supported, getattr(fn, "__qualname__", "rms_norm"))
            return fn(x, self.weight, self.eps)

    return _named(RMSNorm, fn, "RMSNorm")


def swiglu(fn: Callable[..., torch.Tensor], *, dtypes: Iterable[str] | None = None) -> type[nn.Module]:
    """Contract ``SwiGLU`` calling ``fn(x, w_gate, w_up, w_down)`` with the ``nn.Linear`` weights (out, in)."""
    supported = tuple(dtypes) if dtypes is not None else None

    class SwiGLU(nanolm_core.SwiGLU):
        __doc__ = f"SwiGLU(dim, hidden_dim) running {getattr(fn, '__qualname__', fn)}(x, w_gate, w_up, w_down)."

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            require_dtype(x.dtype, supported, getattr(fn, "__qualname__", "swiglu"))
            return fn(x, self.w_gate.weight, self.w_up.weight, self.w_down.weight)

    return _named(SwiGLU, fn, "SwiGLU")


def block(fn: Callable[..., torch.Tensor], *, dtypes: Iterable[str] | None = None) -> type[nn.Module]:
    """Contract ``Block`` calling ``fn(x, params, config)``: params maps the contract's state-dict names
    ("attn_norm.weight", "attn.wq.weight", …, "ffn.w_down.weight") to the live parameters."""
    supported = tuple(dtypes) if dtypes is not None else None

    class Block(nanolm_core.Block):
        __doc__ = f"Block(config) running {getattr(fn, '__qualname__', fn)}(x, params, config)."

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            require_dtype(x.dtype, supported, getattr(fn, "__qualname__", "block"))
            return fn(x, dict(self.named_parameters()), self.config)

    return _named(Block, fn, "Block")


def add_rmsnorm(
    fn: Callable[..., Any], *, in_place: bool = False, dtypes: Iterable[str] | None = None
) -> type[nn.Module]:
    """Contract ``AddRMSNorm`` calling ``fn(x, residual, weight, eps)``, which returns (y, h) — or, with
    ``in_place=True``, writes y into its x and x + residual into its residual (vLLM / FlashInfer's signature) and
    returns nothing: the kit passes copies and returns them as (y, h)."""
    supported = tuple(dtypes) if dtypes is not None else None
    label = getattr(fn, "__qualname__", "fused_add_rms_norm")

    class AddRMSNorm(nanolm_core.AddRMSNorm):
        __doc__ = f"AddRMSNorm(dim, eps) running {label}(x, residual, weight, eps)" + (" on copies" if in_place else "")

        def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            require_dtype(x.dtype, supported, label)
            if not in_place:
                return fn(x, residual, self.weight, self.eps)
            y, h = x.clone(), residual.clone()  # the kernel's arguments: never the caller's tensors
            fn(y, h, self.weight, self.eps)
            return y, h

    return _named(AddRMSNorm, fn, "AddRMSNorm")


# ---------------------------------------------------------------------------------------------- names and fusion


@dataclasses.dataclass(frozen=True)
class Fuse:
    """A library parameter that is the contract's parameters concatenated along ``dim`` (gate_up, qkv)."""

    names: tuple[str, ...]
    dim: int = 0

    def __init__(self, *names: str, dim: int = 0) -> None:
        object.__setattr__(self, "names", tuple(names))
        object.__setattr__(self, "dim", dim)


def library_params(
    owner: nn.Module, names: Mapping[str, str | Fuse], prefix: str = "", source: str = ""
) -> dict[str, torch.Tensor]:
    """{prefix + library name: tensor} for a name map library name → contract name (or Fuse of contract names),
    the contract names read under ``source`` in ``owner`` (e.g. source "attn." in a Block)."""
    out = {}
    for lib, contract in names.items():
        if isinstance(contract, Fuse):
            parts = [_attribute(owner, source + n) for n in contract.names]
            out[prefix + lib] = torch.cat(parts, dim=contract.dim)
        else:
            out[prefix + lib] = _attribute(owner, source + contract)
    return out


def _attribute(owner: nn.Module, dotted: str) -> torch.Tensor:
    """owner.a.b.weight by attribute access: whatever tensor sits there now (a Parameter, or the plain tensor that
    ``torch.func.functional_call`` — gradcheck, a caller's swap — put in its place)."""
    value: Any = owner
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def to_contract(
    library_state: Mapping[str, torch.Tensor], names: Mapping[str, str | Fuse], sizes: Mapping[str, int]
) -> dict[str, torch.Tensor]:
    """The inverse of a name map: a library's state dict → the contract's names, fused tensors split along their
    dim into the contract parameters' sizes (``sizes``: contract name → its size along that dim)."""
    out = {}
    for lib, contract in names.items():
        value = library_state[lib]
        if isinstance(contract, Fuse):
            parts = torch.split(value, [sizes[n] for n in contract.names], dim=contract.dim)
            out.update(zip(contract.names, parts, strict=True))
        else:
            out[contract] = value
    return out


def offset_weight(weight: torch.Tensor, offset: float) -> torch.Tensor:
    """The stored parameter of a library that multiplies by (offset + stored): weight − offset, in fp64 (exact for
    fp32 and narrower weights with |w| ≥ 2⁻²⁹; fp32 where the device has no fp64)."""
    wide = torch.float32 if weight.device.type == "mps" else torch.float64
    return weight.to(wide) - offset


# ---------------------------------------------------------------------------------------------- RoPE layouts


def rope_permutation(head_dim: int, *, to: str = "interleaved") -> torch.Tensor:
    """Index p of one head's K rows: rows_to = rows_from[p]. Rotate-half pairs (j, j + K/2), interleaved pairs
    (2j, 2j + 1), both with frequency θ^(−2j/K); ``to`` is "interleaved" or "rotate-half"."""
    if head_dim % 2:
        raise ValueError(f"RoPE needs an even head dimension, got {head_dim}")
    half = torch.arange(head_dim // 2)
    to_interleaved = torch.stack((half, half + head_dim // 2), dim=1).reshape(-1)  # row 2j ← j, 2j+1 ← j + K/2
    if to == "interleaved":
        return to_interleaved
    if to == "rotate-half":
        return torch.argsort(to_interleaved)
    raise ValueError(f"to={to!r}; expected 'interleaved' or 'rotate-half'")


def permute_rope(weight: torch.Tensor, n_heads: int, *, to: str = "interleaved") -> torch.Tensor:
    """W_q or W_k (n_heads·K, D) with each head's rows reordered for the other RoPE layout (differentiable)."""
    K = weight.shape[0] // n_heads
    p = rope_permutation(K, to=to).to(weight.device)
    index = (torch.arange(n_heads, device=weight.device)[:, None] * K + p[None]).reshape(-1)
    return weight.index_select(0, index)


# ---------------------------------------------------------------------------------------------- non-torch code


def _ml_dtypes() -> Any:
    return importlib.import_module("ml_dtypes") if importlib.util.find_spec("ml_dtypes") else None


def to_array(t: torch.Tensor) -> np.ndarray:
    """A numpy view of a tensor (through DLPack; bf16 as ``ml_dtypes.bfloat16``, DtypeNotSupported without it)."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        ml = _ml_dtypes()
        if ml is None:
            raise DtypeNotSupported("numpy has no bfloat16 (pip install ml_dtypes)")
        return t.view(torch.int16).numpy().view(ml.bfloat16)
    return np.from_dlpack(t.contiguous())


def from_array(a: Any, like: torch.Tensor) -> torch.Tensor:
    """A foreign array (numpy, JAX, anything with ``__dlpack__`` or convertible by numpy) as a tensor on the device
    of ``like``; its dtype is kept (a kernel that returns another dtype is seen doing so)."""
    ml = _ml_dtypes()
    arr = a
    if ml is not None and getattr(getattr(a, "dtype", None), "name", "") == "bfloat16":
        arr = np.asarray(a).view(np.int16)
        return torch.from_numpy(arr.copy()).view(torch.bfloat16).to(like.device)
    try:
        t = torch.from_dlpack(arr)
    except (TypeError, BufferError, RuntimeError, AttributeError):
        t = torch.from_numpy(np.array(arr))
    return t.clone().to(like.device)  # own memory: the foreign buffer may be reused or freed


def bridge(
    forward: Callable[..., Any],
    vjp: Callable[..., Sequence[Any]] | None = None,
    *,
    dtypes: Iterable[str] | None = None,
    name: str | None = None,
) -> Callable[..., Any]:
    """A torch function running ``forward(*arrays)`` (tensor arguments as numpy arrays, others as given) inside a
    ``torch.autograd.Function``. ``vjp(grad_out, *arrays)`` returns one gradient (or None) per argument (several
    outputs: ``grad_out`` is the tuple of their cotangents)."""
    label = name or getattr(forward, "__qualname__", "forward")
    supported = tuple(dtypes) if dtypes is not None else None

    class _Bridge(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *args: Any) -> Any:
            like = next(a for a in args if isinstance(a, torch.Tensor))
            require_dtype(like.dtype, supported, label)
            arrays = [to_array(a) if isinstance(a, torch.Tensor) else a for a in args]
            ctx.arrays, ctx.like = arrays, [a if isinstance(a, torch.Tensor) else None for a in args]
            out = forward(*arrays)
            ctx.several = isinstance(out, tuple)
            return tuple(from_array(o, like) for o in out) if ctx.several else from_array(out, like)

        @staticmethod
        def backward(ctx: Any, *grad_outs: torch.Tensor) -> tuple[Any, ...]:
            if vjp is None:
                raise NotImplementedError(f"{label}: forward-only kernel (the bridge was given no vjp)")
            if torch.is_grad_enabled():  # create_graph=True: a double backward through a vjp computed outside torch
                raise NotImplementedError(f"{label}: its vjp runs outside torch, so its gradient has no derivative")
            cotangents = tuple(to_array(g) for g in grad_outs)
            grads = vjp(cotangents if ctx.several else cotangents[0], *ctx.arrays)
            return tuple(
                None if g is None or like is None else from_array(g, like)
                for g, like in zip(grads, ctx.like, strict=True)
            )

    def run(*args: Any) -> Any:
        return _Bridge.apply(*args)

    run.__name__ = run.__qualname__ = label
    run.__module__ = getattr(forward, "__module__", __name__)
    return run
