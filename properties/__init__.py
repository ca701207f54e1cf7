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

Stable import paths of version 1 (``properties.registry``, ``properties.ulp``, ``properties.bounds``,
``properties.impl``, ``properties.check``, ``properties.expectations``) name the modules that now live in
the layers; ``MOVED`` maps them, and this package's import hook resolves them to the same module objects.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

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
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import properties.registry`` → the module ``properties.running.runner`` itself (one object, two names)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(name, self) if name in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:  # already executed under its own name
        pass


if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedFinder())
