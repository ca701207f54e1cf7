"""The registry of component records: name → record, in contract order.

A leaf: it imports nothing, so a module that reads a record's plain data (``conventions``: the reference's compute
dtypes and batch invariance) finds it here without importing what the records' callables use (strategies, harness,
bounds — which import ``conventions`` themselves). The records are built and registered by
``properties.library.components``, which re-exports these names; read them from there.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RECORDS", "names", "record", "register", "unregister"]

RECORDS: dict[str, Any] = {}


def register(component: Any) -> Any:
    """Add ``component`` to the registry (a name already there is an error: records are not replaced)."""
    if component.name in RECORDS:
        raise ValueError(f"component {component.name!r} is already registered")
    RECORDS[component.name] = component
    return component


def unregister(name: str) -> None:
    """Remove a record added by :func:`register` (a test's throwaway component)."""
    RECORDS.pop(name, None)


def names() -> tuple[str, ...]:
    """The components' names, in contract order (light: nothing is imported)."""
    return tuple(RECORDS)


def record(name: str) -> Any:
    """The record of ``name``; ValueError naming the known components for any other name."""
    try:
        return RECORDS[name]
    except KeyError:
        raise ValueError(f"unknown component {name!r}; expected one of {', '.join(RECORDS)}") from None
