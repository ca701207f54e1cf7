"""The global torch state the laws assume, and the guard that keeps a subject from changing it unnoticed.

Before each law the runner establishes ``ASSUMED`` (grad mode on, default dtype fp32, no flush-to-zero of
subnormals, …, the configured thread count); the harness takes a :func:`snapshot` around every call into the
subject (constructor, ``.to``, ``load_state_dict``, forward, backward) and the loader around its import. A
setting the subject changed is reported against the subject, by name (:func:`changes`), and put back
(:func:`restore`), so no other component is blamed for it. Where the subject runs in a process of its own, its
server measures the same around every request and the judge adds what it reports (:func:`report`) to the guard's
findings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import torch

__all__ = ["SETTINGS", "Setting", "changes", "establish", "put_back", "report", "reported", "restore", "snapshot"]


_SUBNORMAL = torch.tensor(2.0**-1070, dtype=torch.float64, device="cpu")


_CPU = torch.device("cpu")


_MODES = getattr(torch._C, "_len_torch_function_stack", None)  # (private: a torch without them reads it in full)
_GLOBAL_DEVICE = getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None)


def _default_device() -> torch.device:
    """``torch.get_default_device()``, read without its cost (≈ 4 µs, a quarter of a snapshot) where nothing set a
    default device: no function mode (``with torch.device(…)``, ``set_default_device`` push one) and no global one."""
    if _MODES is None or _GLOBAL_DEVICE is None or _MODES() or getattr(_GLOBAL_DEVICE, "device_context", None):
        return torch.get_default_device()
    return _CPU


def _flushes_subnormals() -> bool:
    """torch has no getter for ``set_flush_denormal``: a product that must give a subnormal tells (made once: a
    snapshot is taken around every call of the subject)."""
    return (_SUBNORMAL * 1.0).item() == 0.0


@dataclasses.dataclass(frozen=True)
class Setting:
    """One piece of global state: how to read it, how to set it, and the value the laws assume (None: keep)."""

    name: str
    get: Callable[[], Any]
    set: Callable[[Any], Any]
    assumed: Any = None


SETTINGS: tuple[Setting, ...] = (
    Setting("grad mode", torch.is_grad_enabled, torch.set_grad_enabled, True),
    Setting("default dtype", torch.get_default_dtype, torch.set_default_dtype, torch.float32),
    Setting("flush-denormal", _flushes_subnormals, torch.set_flush_denormal, False),
    Setting("deterministic algorithms", torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
    Setting(
        "float32 matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision, "highest"
    ),
    Setting("anomaly mode", torch.is_anomaly_enabled, torch.set_anomaly_enabled, False),
    Setting("default device", _default_device, torch.set_default_device, _CPU),
    Setting(
        "CPU autocast", lambda: torch.is_autocast_enabled("cpu"), lambda v: torch.set_autocast_enabled("cpu", v), False
    ),
    Setting("torch threads", torch.get_num_threads, torch.set_num_threads),
    Setting("inter-op threads", torch.get_num_interop_threads, lambda v: None),  # settable once per process: read only
)
if torch.cuda.is_available():  # TF32 would make "fp32" mean 10 mantissa bits on Ampere and later
    SETTINGS += (
        Setting("CUDA matmul TF32", lambda: torch.backends.cuda.matmul.allow_tf32,
                lambda v: setattr(torch.backends.cuda.matmul, "allow_tf32", v), False),
        Setting("cuDNN TF32", lambda: torch.backends.cudnn.allow_tf32,
                lambda v: setattr(torch.backends.cudnn, "allow_tf32", v), False),
    )  # fmt: skip


_REPORTED: list[str] = []  # changes measured in the subject's process and reported to the judge, in order


def report(changed: list[str]) -> None:
    """Changes of global state measured in another process (the subject's: ``library.remote``), for the guard of
    the step in progress (:func:`reported`)."""
    _REPORTED.extend(changed)


def reported(since: int | None = None) -> Any:
    """With no argument: a mark (how many changes were reported so far). With a mark: the changes reported since."""
    return len(_REPORTED) if since is None else list(_REPORTED[since:])


def snapshot() -> dict[str, Any]:
    """The current value of every setting."""
    return {s.name: s.get() for s in SETTINGS}


def changes(before: Mapping[str, Any], after: Mapping[str, Any] | None = None) -> list[str]:
    """ "flush-denormal False → True" for every setting that differs between two snapshots."""
    after = snapshot() if after is None else after
    return [f"{name} {before[name]!r} → {after[name]!r}" for name in before if after.get(name) != before[name]]


def restore(values: Mapping[str, Any]) -> None:
    """Put every setting back to ``values`` (those that differ from now)."""
    now = snapshot()
    for s in SETTINGS:
        if now[s.name] != values[s.name]:
            s.set(values[s.name])


def put_back(before: Mapping[str, Any]) -> list[str]:
    """What changed since the snapshot ``before`` (:func:`changes`), every setting then put back to it — the end of
    each guard: around a call into the subject, a request in the subject's process, an import."""
    after = snapshot()
    if after == before:
        return []
    changed = changes(before, after)
    restore(before)
    return changed


def establish(threads: int | None = None) -> dict[str, Any]:
    """Set the state the laws assume (``threads``: the torch thread count of the run) and return it."""
    for s in SETTINGS:
        if s.assumed is not None and s.get() != s.assumed:
            s.set(s.assumed)
    if threads is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return snapshot()
