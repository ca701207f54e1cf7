"""The subject: an implementation under test, as the laws see it (the fixed contract in DESIGN.md).

An implementation is a module that may define any subset of the components (the records of
``properties.library.components``: ``RMSNorm``, ``SwiGLU``, ``Block``, ``AddRMSNorm``); a missing one is "not
provided" (skipped, never an error). How a module is found and imported is the runner's business
(``properties.running.loading``).
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

from properties.library import components
from properties.library.conventions import Conventions, parse_all

__all__ = ["COMPONENTS", "Implementation", "NotProvided"]

COMPONENTS = components.names()  # the contract's components (the records; a registered one is seen by the methods)


class NotProvided(Exception):
    """The implementation does not define this component (reported as a skip, never an error)."""


@dataclasses.dataclass(frozen=True)
class Implementation:
    """A loaded implementation: its name as given, the module, and the components it defines."""

    spec: str
    module: ModuleType
    import_effects: tuple[str, ...] = ()  # global torch state the import changed ("flush-denormal False → True")

    @property
    def name(self) -> str:
        return self.spec

    @property
    def provided(self) -> tuple[str, ...]:
        return tuple(c for c in components.names() if callable(getattr(self.module, c, None)))

    def factory(self, component: str) -> Any:
        """The constructor for ``component``; raises NotProvided when the module lacks it."""
        components.record(component)  # ValueError naming the known components
        factory = getattr(self.module, component, None)
        if not callable(factory):
            raise NotProvided(f"{component} not provided by {self.spec}")
        return factory

    def convention(self, component: str) -> dict[str, Any]:
        """What the module declares about how it computes ``component`` (module attribute CONVENTIONS), as written."""
        return dict((getattr(self.module, "CONVENTIONS", None) or {}).get(component, {}))

    @property
    def conventions(self) -> dict[str, Conventions]:
        """The declarations of CONVENTIONS, validated, for every component (``conventions.Conventions``; an
        undeclared component has an empty one). ConventionError for a declaration that cannot be understood."""
        return parse_all(getattr(self.module, "CONVENTIONS", None), components.names())

    @property
    def skip_reason(self) -> str | None:
        """A module-level reason to skip everything (e.g. an adapter whose kernels need CUDA)."""
        return getattr(self.module, "SKIP_REASON", None)
