"""The layer rule, enforced: every import of the project's own modules (top-level and nested, parsed from the
source, never executed) goes from a higher layer to a lower one or stays inside its group, and no imports
form a cycle. The layer map is ``properties.LAYERS``; the stable version-1 paths (``properties.MOVED``) are for
users, never for the project's own code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

import properties

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nanolm_core", "golden", "properties", "exercises_en")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    return {module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}


def imports(name: str, path: Path, known: Iterable[str]) -> list[tuple[str, int]]:
    """(imported project module, line) for every import statement anywhere in the file (``from p import m``
    names the module ``p.m`` when ``known`` has it, else ``p``)."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        out += [(t, node.lineno) for t in targets if t.split(".")[0] in {n.split(".")[0] for n in known}]
    return out


def layer_of(name: str, layers: Mapping[str, int]) -> tuple[str, int]:
    """The most specific prefix of ``name`` in ``layers`` (the module's group) and its layer."""
    matches = [p for p in layers if name == p or name.startswith(p + ".")]
    group = max(matches, key=len)
    return group, layers[group]


def violations(root: Path, packages: Iterable[str], layers: Mapping[str, int], moved: Iterable[str] = ()) -> list[str]:
    """Every upward import, import of a moved path, and import cycle among the project's modules."""
    known = project_modules(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in known}
    problems = []
    for name, path in known.items():
        src_group, src_layer = layer_of(name, layers)
        for target, line in imports(name, path, {*known, *moved}):
            where = f"{path.relative_to(root)}:{line}"
            if target in moved:
                problems.append(f"{where}: imports the version-1 path {target}; use the module it names")
                continue
            if target not in known:
                continue
            dst_group, dst_layer = layer_of(target, layers)
            if dst_layer >= src_layer and dst_group != src_group and not src_group.startswith(dst_group + "."):
                problems.append(f"{where}: {name} (layer {src_layer}) imports {target} (layer {dst_layer})")
            if target != name:
                graph[name].add(target)
    problems += [f"import cycle: {' → '.join(c)}" for c in cycles(graph)]
    return problems


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as a path through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_project_keeps_its_layers_and_has_no_import_cycle():
    assert violations(ROOT, PACKAGES, properties.LAYERS, properties.MOVED) == []


def test_every_project_module_has_a_layer():
    for name in project_modules(ROOT, PACKAGES):
        assert layer_of(name, properties.LAYERS), name


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the layer structure in miniature: low (layer 1), mid (2), top (3)."""
    for rel, text in {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "",
        "pkg/low/a.py": "import math\n",
        "pkg/mid/__init__.py": "",
        "pkg/mid/b.py": "from pkg.low import a\n",
        "pkg/top/__init__.py": "",
        "pkg/top/c.py": "from pkg.mid.b import thing\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


LAYERS = {"pkg": 0, "pkg.low": 1, "pkg.mid": 2, "pkg.top": 3}


def test_the_checker_passes_a_layered_tree(tree):
    assert violations(tree, ["pkg"], LAYERS) == []


def test_an_added_upward_import_fails_even_inside_a_function(tree):
    (tree / "pkg/low/a.py").write_text("def f():\n    from pkg.top import c\n    return c\n")
    [problem] = [p for p in violations(tree, ["pkg"], LAYERS) if "layer" in p]
    assert "pkg/low/a.py:2: pkg.low.a (layer 1) imports pkg.top.c (layer 3)" == problem


def test_a_cycle_inside_one_group_fails(tree):
    (tree / "pkg/mid/d.py").write_text("from pkg.mid import b\n")
    (tree / "pkg/mid/b.py").write_text("from pkg.low import a\nimport pkg.mid.d\n")
    assert violations(tree, ["pkg"], LAYERS) == ["import cycle: pkg.mid.b → pkg.mid.d"]


def test_relative_imports_are_resolved(tree):
    (tree / "pkg/low/a.py").write_text("from ..top import c\n")
    assert any("imports pkg.top.c" in p for p in violations(tree, ["pkg"], LAYERS))


def test_a_moved_path_is_refused_in_project_code(tree):
    (tree / "pkg/mid/b.py").write_text("import pkg.old_name\n")
    assert violations(tree, ["pkg"], LAYERS, moved={"pkg.old_name"}) == [
        "pkg/mid/b.py:1: imports the version-1 path pkg.old_name; use the module it names"
    ]


@pytest.mark.parametrize("old", sorted(properties.MOVED))
def test_version_1_import_paths_still_work_and_warn(old, monkeypatch):
    """Every public import path of version 1 names the very module it moved to, with a DeprecationWarning that
    points at the importing line."""
    import importlib
    import sys

    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: import {properties.MOVED[old]}") as caught:
        assert importlib.import_module(old) is importlib.import_module(properties.MOVED[old])
    assert len(caught) == 1


def test_the_documented_names_resolve(monkeypatch):
    import sys

    for old in properties.MOVED:  # as in a fresh interpreter: not imported yet
        monkeypatch.delitem(sys.modules, old, raising=False)
        monkeypatch.delattr(properties, old.rpartition(".")[2], raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        from properties import bounds, ulp
        from properties.check import run_check
        from properties.expectations import apply
        from properties.impl import load
        from properties.registry import LAWS, Law, LawResult, law, run_law

    assert all((bounds.rmsnorm, ulp.ulp_error, run_check, apply, load, LAWS, Law, LawResult, law, run_law))
    assert (
        len(caught) == 6
    )  # one warning per old path imported above (bounds, ulp, check, expectations, impl, registry)


def test_the_deprecation_warning_points_at_the_users_import(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "old_user.py"
    script.write_text("import warnings\nwarnings.simplefilter('default')\nfrom properties.registry import run_law\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert f"{script}:3: DeprecationWarning: properties.registry is deprecated" in out.stderr, out.stderr


def test_importing_the_package_installs_no_import_hook():
    """``import properties`` (any pytest run where the package is installed imports it) leaves sys.meta_path alone."""
    import subprocess
    import sys

    code = "import sys; before = list(sys.meta_path); import properties; print(sys.meta_path == before)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "True"
