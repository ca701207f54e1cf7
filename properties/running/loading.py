"""Loading the implementation under test: the module named on the command line, by --impl or $NANOLM_IMPL.

An implementation is a module named by a dotted path (``pkg.mod``), a path to a ``.py`` file, or a
short adapter id (``torch``, ``hf-llama``, …). It may define any subset of the components (the records of
``properties.library.components``); a missing one is "not provided" (skipped), a module that cannot be imported
or defines none is a usage error.
Selection precedence: CLI argument > pytest ``--impl`` > ``NANOLM_IMPL`` > ``nanolm_core``.

Adapter ids are entry points of the group ``nanolm_verify.adapters`` (``id = "package.module"``), read from the
installed distributions' metadata when an id is first needed: the suite registers its shipped adapters there
(pyproject.toml), and a kernel library registers its own the same way, so ``nanolm-verify check mylib`` works
once the library is installed. Importing this module imports neither torch nor the law library (the command
line prints its help from it): those come with ``load``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from properties.library import components  # light: names() imports no torch

if TYPE_CHECKING:  # re-exported from the law library, imported when first asked for (module __getattr__ below)
    from properties.library.subject import COMPONENTS, Implementation, NotProvided

__all__ = [
    "COMPONENTS",
    "DEFAULT_IMPL",
    "ENTRY_POINT_GROUP",
    "ENV_VAR",
    "Implementation",
    "ImplementationError",
    "NotProvided",
    "UsageError",
    "adapters",
    "load",
    "resolve_spec",
]

_IMPORT_EFFECTS: dict[str, tuple[str, ...]] = {}  # what importing each module did to torch's state (first import)
ENV_VAR = "NANOLM_IMPL"
DEFAULT_IMPL = "nanolm_core"
ENTRY_POINT_GROUP = "nanolm_verify.adapters"  # adapter id → module, one entry point each (pyproject.toml)


class ImplementationError(Exception):
    """The implementation cannot be used at all (usage error: CLI exit status 2)."""


class UsageError(ValueError):
    """A bad selection (law, dtype, device) or argument: a usage error, exit status 2 on the command line."""


@functools.cache
def _registered() -> dict[str, tuple[str, ...]]:
    """Adapter id → the module paths registered for it, from every installed distribution's entry points."""
    from importlib.metadata import entry_points

    found = [(ep.name, ep.value, ep.dist.name if ep.dist else "") for ep in entry_points(group=ENTRY_POINT_GROUP)]
    if not any(dist.lower().replace("_", "-") == "nanolm-verify" for *_, dist in found):
        found = [*_source_tree_ids(), *found]  # run from a checkout whose installed metadata predates the group
    table: dict[str, tuple[str, ...]] = {}
    for name, value, _ in found:
        table[name] = tuple(dict.fromkeys((*table.get(name, ()), value)))
    return table


def _source_tree_ids() -> list[tuple[str, str, str]]:
    """The suite's own ids from the pyproject.toml of the source tree this package is imported from (a checkout
    on PYTHONPATH, or an editable install made before the group existed): the same table, never a copy of it."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        import tomllib  # Python ≥ 3.11; on 3.10 a checkout must be installed for its ids

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (ImportError, OSError, ValueError):
        return []
    if project.get("name") != "nanolm-verify":
        return []
    table = project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    return [(name, value, "nanolm-verify") for name, value in table.items()]


def adapters() -> dict[str, str]:
    """Adapter id → module path: the entry points ``nanolm_verify.adapters`` of every installed distribution (the
    suite's own from its pyproject.toml), in the order the metadata lists them."""
    return {name: values[0] for name, values in _registered().items()}


def _adapter_target(spec: str) -> str:
    """The module an adapter id names (the spec itself when it is no adapter id); an id that two distributions
    register for different modules is refused with both named, never resolved to one of them."""
    values = _registered().get(spec, (spec,))
    if len(values) > 1:
        raise ImplementationError(
            f"adapter id {spec!r} is registered for {' and '.join(values)} (entry points {ENTRY_POINT_GROUP}); "
            "name the module instead"
        )
    return values[0].partition(":")[0]  # an entry point may read module:attribute; the module is the subject


def _ids() -> str:
    return ", ".join(adapters())


def __getattr__(name: str) -> Any:  # the names re-exported from the law library, imported when first asked for
    if name == "ADAPTERS":  # the id table before entry points: adapters() now
        return adapters()
    if name in ("COMPONENTS", "Implementation", "NotProvided"):
        from properties.library import subject

        return getattr(subject, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_spec(cli: str | None = None, option: str | None = None) -> str:
    """The implementation to check: CLI argument > pytest --impl > $NANOLM_IMPL > nanolm_core.

    An argument or option that is given but empty is returned as given (``load`` refuses it), never replaced by
    the default; an empty environment variable counts as unset.
    """
    for value in (cli, option, os.environ.get(ENV_VAR) or None):
        if value is not None:
            return value
    return DEFAULT_IMPL


def _import_file(path: Path) -> ModuleType:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"_nanolm_impl_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImplementationError(f"cannot load implementation file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module


def load(spec: str | None = None) -> Implementation:
    """Import the implementation named by ``spec`` (see module docstring); ImplementationError if unusable."""
    spec = resolve_spec(spec)
    if not spec.strip():
        raise ImplementationError("the implementation name is empty; name a module, a .py file or an adapter id")
    from properties.library import state
    from properties.library.conventions import ConventionError
    from properties.library.subject import Implementation

    target = _adapter_target(spec)
    before = state.snapshot()
    try:
        if target.endswith(".py") or os.sep in target or "/" in target:
            path = Path(target)
            if path.is_dir():
                raise ImplementationError(f"implementation path {target!r} is a directory; name a .py file or a module")
            if not path.is_file():
                raise ImplementationError(f"implementation file {target!r} does not exist")
            module = _import_file(path)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:  # the user's own package, as `python -m` finds it
                sys.path.append(os.getcwd())
            module = importlib.import_module(target)
    except ImplementationError:
        raise
    except ModuleNotFoundError as exc:
        hint = f" (known adapter ids: {_ids()})" if exc.name == target.split(".")[0] else ""
        raise ImplementationError(f"cannot import implementation {spec!r}: {exc}{hint}") from exc
    except (Exception, SystemExit) as exc:  # the user's module raised (or exited) while importing
        raise ImplementationError(f"importing implementation {spec!r} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        effects = _IMPORT_EFFECTS.setdefault(target, tuple(state.put_back(before)))
    impl = Implementation(spec, module, effects)
    if not impl.provided:
        raise ImplementationError(
            f"implementation {spec!r} ({getattr(module, '__file__', module)}) defines none of "
            f"{', '.join(components.names())}; see the implementation contract in the README"
        )
    try:
        impl.conventions  # noqa: B018 — validated once here: a misspelt declaration is a usage error, not ignored
    except ConventionError as exc:
        raise ImplementationError(f"implementation {spec!r} declares conventions that cannot be read: {exc}") from exc
    return impl
