"""The law table: ``@law`` registers a law function under "<Component>.<function name>" in ``LAWS``.

A law is a function ``(impl, dtype, device[, data])`` whose docstring states the law; it raises an
AssertionError (``context.LawFailure``) when the implementation breaks it. A law with a ``data`` parameter
is property-based: it is written ``@given(data=st.data())`` (pins with ``@example(data=…)``) and draws
everything else from ``data``, so the runner can run it under any profile and seed (it wraps the law's
inner test anew for each run, with Hypothesis' public ``given`` / ``settings`` / ``seed``). A law without
``data`` enumerates its inputs. ``properties.library.laws`` imports every law module, which fills the table.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import torch

from golden.formats import FORMATS

__all__ = ["ALL_DTYPES", "LAWS", "Law", "law"]

ALL_DTYPES: tuple[torch.dtype, ...] = tuple(f.dtype for f in FORMATS)
_SIGNATURE = ("impl", "dtype", "device")


@dataclasses.dataclass(frozen=True)
class Law:
    """A registered law: ``id`` = "<Component>.<function name>", the function, and where it applies."""

    id: str
    component: str
    name: str
    func: Callable[..., Any]
    dtypes: tuple[torch.dtype, ...]
    cost: int = 1
    tags: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return " ".join((self.func.__doc__ or "").split())

    @property
    def summary(self) -> str:
        """The law's first sentence."""
        return self.doc.split(". ")[0].rstrip(".") + "."

    @property
    def uses_hypothesis(self) -> bool:
        """True for a property-based law (it draws from ``data``)."""
        return "data" in inspect.signature(self.body).parameters

    @property
    def body(self) -> Callable[..., Any]:
        """The law's own function: the inner test of a ``@given`` law (public: ``.hypothesis.inner_test``)."""
        handle = getattr(self.func, "hypothesis", None)
        return handle.inner_test if handle is not None else self.func


LAWS: dict[str, Law] = {}


def law(
    component: str, *, dtypes: Iterable[torch.dtype] = ALL_DTYPES, cost: int = 1, tags: Iterable[str] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``func`` as the law "<component>.<func.__name__>"; ``cost`` divides the profile's example budget."""

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        law_id = f"{component}.{func.__name__}"
        previous = LAWS.get(law_id)
        if previous is not None and previous.func.__module__ != func.__module__:
            raise ValueError(f"law {law_id} is registered twice ({previous.func.__module__}, {func.__module__})")
        entry = Law(law_id, component, func.__name__, func, tuple(dtypes), cost, tuple(tags))
        params = tuple(inspect.signature(entry.body).parameters)
        if params not in (_SIGNATURE, (*_SIGNATURE, "data")):
            raise TypeError(f"law {law_id}: parameters {params}; expected (impl, dtype, device) or (…, data)")
        if entry.uses_hypothesis and not hasattr(func, "hypothesis"):
            raise TypeError(f"law {law_id} draws from `data` but is not decorated with @given(data=st.data())")
        LAWS[law_id] = entry
        return func

    return register
