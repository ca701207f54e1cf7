"""properties — the laws, their strategies, error metrics and bounds, implementation loading and reports.

The package is layered (``LAYERS`` below); a module imports only from a lower layer or from its own group,
and no imports form a cycle (``tests/test_layers.py`` parses every import, top-level and nested):

    entry/       6  entry points: the ``nanolm-verify`` command line, the pytest plugin
    conformance/ 6  the conformance tests shipped in the package (``pytest --pyargs properties.conformance``)
    commands/    5  what a user types: check, compare, baselines, pitfalls (teach), plots
    testing      5  drop-in assertions for users' own tests (``assert_rmsnorm_close`` …)
    running/     4  loading and running: implementations, profiles, the runner, expectations
    library/     3  the law library: run-time context, law table, strategies, assertions, harness, laws/
    numerics/    2  one numerical truth: ULP / relative error, derived bounds (dtype facts: golden.formats)
    adapters/, gallery/   2  the subjects: third-party code wrapped to the contract, the catalogue of wrong
                 implementations — they import nanolm_core (and their libraries), never the verifier

``golden`` (the oracle, layer 1) and ``nanolm_core`` (the reference, layer 0) sit below all of these.

Import paths of version 1 (``properties.registry``, ``properties.ulp``, ``properties.bounds``, ``properties.impl``,
``properties.check``, ``properties.expectations`` and the other modules 0.1 had at the top: ``MOVED`` maps them)
are deprecated: each is a small module that warns (``DeprecationWarning``) and makes the old name the module it
moved to; a public name that moved out of a module that stays (``MOVED_NAMES``: ``hf_llama.causal_mask``) is
served by that module's ``__getattr__`` with the same warning. They go after one minor version.
Importing this package installs nothing and imports nothing else.
"""

from __future__ import annotations

import importlib
import sys
import warnings

__version__ = "0.2.0"

# Module-name prefix → layer (the most specific prefix applies; imports go from a higher layer to a lower one,
# or stay inside one group). ``nanolm_core`` is the reference, ``golden`` the oracle: every layer may use them.
LAYERS = {
    "nanolm_core": 0,
    "golden": 1,
    "exercises_en": 1,
    "properties": 1,
    "properties.adapters": 2,
    "properties.gallery": 2,
    "properties.numerics": 2,
    "properties.library": 3,
    "properties.running": 4,
    "properties.commands": 5,
    "properties.testing": 5,
    "properties.entry": 6,
    "properties.conformance": 6,
}

MOVED = {
    "properties.registry": "properties.running.runner",
    "properties.ulp": "properties.numerics.ulp",
    "properties.bounds": "properties.numerics.bounds",
    "properties.impl": "properties.running.loading",
    "properties.check": "properties.commands.check",
    "properties.expectations": "properties.running.expectations",
    # the other modules of 0.1 that moved into the layers (``git log --diff-filter=D``; properties.laws and its
    # private helpers are the law table's own: internal)
    "properties.assertions": "properties.library.assertions",
    "properties.baseline": "properties.commands.baseline",
    "properties.cli": "properties.entry.cli",
    "properties.compare": "properties.commands.compare",
    "properties.plots": "properties.commands.plots",
    "properties.plugin": "properties.entry.plugin",
    "properties.profiles": "properties.running.profiles",
    "properties.strategies": "properties.library.strategies",
    "properties.teach": "properties.commands.teach",
}
# Public names that moved out of a module that stays: {module: {old name: "new.module:new_name"}}. The module's
# ``__getattr__`` calls :func:`moved_name`, which warns and returns the object under its new name.
MOVED_NAMES = {
    "properties.adapters.hf_llama": {
        "causal_mask": "properties.adapters.hf:causal_mask",  # shared by every HF family (issue 37: no alias)
        "llama_inputs": "properties.adapters.hf:decoder_inputs",
    },
}
LAYERS |= dict.fromkeys(MOVED, 7)  # the deprecated aliases sit above everything: nothing of ours imports them


def moved_name(module: str, name: str) -> object:
    """A module's ``__getattr__`` for its names that moved (``MOVED_NAMES``): warn (``DeprecationWarning`` at the
    line that used the old name) and return the object from its new place; AttributeError for any other name."""
    target = MOVED_NAMES.get(module, {}).get(name)
    if target is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    where, _, new = target.partition(":")
    warnings.warn(
        f"{module}.{name} is deprecated: use {where}.{new} (the old name goes after one minor version)",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(where), new)


def _moved(name: str) -> None:
    """In the version-1 module ``name``: make it the module it moved to (one object under both names) and warn at
    the import that used the old path (stacklevel 3: past the alias module; warnings skips the import machinery)."""
    message = f"{name} is deprecated: import {MOVED[name]} (the old path goes after one minor version)"
    warnings.warn(message, DeprecationWarning, stacklevel=3)
    sys.modules[name] = importlib.import_module(MOVED[name])
