"""Loading the implementation under test: the module named on the command line, by --impl or $NANOLM_IMPL.

An implementation is a module named by a dotted path (``pkg.mod``), a path to a ``.py`` file, or a
short adapter id (``torch``, ``hf-llama``, …). It may define any subset of COMPONENTS; a missing
one is "not provided" (skipped), a module that cannot be imported or defines none is a usage error.
Selection precedence: CLI argument > pytest ``--impl`` > ``NANOLM_IMPL`` > ``nanolm_core``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from properties.library import state
from properties.library.conventions import ConventionError
from properties.library.subject import COMPONENTS, Implementation, NotProvided

__all__ = [
    "ADAPTERS",
    "COMPONENTS",
    "DEFAULT_IMPL",
    "ENV_VAR",
    "Implementation",
    "ImplementationError",
    "NotProvided",
    "load",
    "resolve_spec",
]

_IMPORT_EFFECTS: dict[str, tuple[str, ...]] = {}  # what importing each module did to torch's state (first import)
ENV_VAR = "NANOLM_IMPL"
DEFAULT_IMPL = "nanolm_core"
# Short ids for the adapters shipped with the suite (properties/adapters/, described in docs/adapters.md).
ADAPTERS = {
    "reference": "nanolm_core",
    "torch": "properties.adapters.torch_ref",
    "torch-compile": "properties.adapters.torch_compile",
    "hf-llama": "properties.adapters.hf_llama",
    "hf-gemma": "properties.adapters.hf_gemma",
    "hf-qwen2": "properties.adapters.hf_qwen2",
    "hf-mistral": "properties.adapters.hf_mistral",
    "hf-phi3": "properties.adapters.hf_phi3",
    "hf-olmo2": "properties.adapters.hf_olmo2",
    "hf-t5": "properties.adapters.hf_t5",
    "hf-gemma3": "properties.adapters.hf_gemma3",
    "torchtune": "properties.adapters.torchtune",
    "timm": "properties.adapters.timm",
    "onnxruntime": "properties.adapters.onnx_runtime",
    "liger": "properties.adapters.liger",
    "fla": "properties.adapters.fla",
}


class ImplementationError(Exception):
    """The implementation cannot be used at all (usage error: CLI exit status 2)."""


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
    target = ADAPTERS.get(spec, spec)
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
        hint = f" (known short ids: {', '.join(ADAPTERS)})" if exc.name == target.split(".")[0] else ""
        raise ImplementationError(f"cannot import implementation {spec!r}: {exc}{hint}") from exc
    except (Exception, SystemExit) as exc:  # the user's module raised (or exited) while importing
        raise ImplementationError(f"importing implementation {spec!r} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        effects = _IMPORT_EFFECTS.setdefault(target, tuple(state.changes(before)))
        state.restore(before)
    impl = Implementation(spec, module, effects)
    if not impl.provided:
        raise ImplementationError(
            f"implementation {spec!r} ({getattr(module, '__file__', module)}) defines none of "
            f"{', '.join(COMPONENTS)}; see the implementation contract in the README"
        )
    try:
        impl.conventions  # noqa: B018 — validated once here: a misspelt declaration is a usage error, not ignored
    except ConventionError as exc:
        raise ImplementationError(f"implementation {spec!r} declares conventions that cannot be read: {exc}") from exc
    return impl
