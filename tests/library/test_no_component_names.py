"""No module outside a component's own files names a component in a list, a dict, a comparison or a branch (#34):
a generic module reads the records (``components.RECORDS``), so a component added by one record gets what the
others get, and none is left out of a list it was never added to.

The scan walks the syntax tree of every module under ``properties/`` but the component-owned ones (``OWN``) and
fails on a *component name* inside a list, tuple, set or dict literal, a comparison, the test of an ``if``,
``while`` or conditional expression, or a ``match``. A component name is

* a string constant equal to a registered component's name ("RMSNorm", "AddRMSNorm" …) or its law-id spelling
  (``record.snake``: "rmsnorm", "add_rmsnorm" …), or
* an identifier (a name or an attribute) that a component-owned module defines at module level under the
  component's spelling and more (``build_rmsnorm``, ``rmsnorm_forward``, ``RMSNORM_PATHS`` …; the bare spelling,
  ``bounds.block``, is also every variable holding a block).

A string passed to a call (``@law("RMSNorm")``, ``record("Block")``) is not a list of components and is not
flagged: the law table keys a law by its component, and a record is fetched by name.

It fails on the old code. Run on main's tree before this change (``find_names(<main>/properties)``, at b22d2a7)
it finds 9 names, now 0:

    library/harness.py:149             'Block'  (impl.conventions["Block"].rope_layout != "interleaved")
    library/laws/paths.py:155, 170     rmsnorm_vjp, swiglu_vjp  (the code-path law written per component)
    library/strategies/code_paths.py   'RMSNorm', 'SwiGLU', 'Block'  (PATHS, a dict keyed by component)
    library/strategies/pins.py         'RMSNorm', 'SwiGLU', 'Block'  (PROTOCOL_PINS, a dict keyed by component)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from properties.library import components

ROOT = Path(__file__).resolve().parents[2] / "properties"

# The component-owned modules, relative to properties/: where a component is named by design.
OWN = (
    "library/components.py",  # the records themselves
    "library/strategies/rmsnorm.py",  # each component's own strategies …
    "library/strategies/swiglu.py",
    "library/strategies/block.py",
    "library/strategies/add_rmsnorm.py",
    "library/laws/rmsnorm.py",  # … its own laws …
    "library/laws/swiglu.py",
    "library/laws/block.py",
    "library/laws/add_rmsnorm.py",
    "numerics/bounds/norm.py",  # … and its bounds
    "numerics/bounds/add_norm.py",
    "numerics/bounds/feedforward.py",
    "numerics/bounds/decoder.py",
    "adapters/",  # data: an adapter names the components it implements
    "gallery/",  # data: a catalogue entry names the component it breaks
)


def _spellings() -> tuple[set[str], list[str]]:
    """The components' names and law-id spellings (string constants), and the spellings a per-component
    identifier contains (lower case, as words of an identifier)."""
    recs = components.RECORDS.values()
    return {r.name for r in recs} | {r.snake for r in recs}, [r.snake for r in recs]


def _owned(path: Path, root: Path) -> bool:
    rel = path.relative_to(root).as_posix()
    return any(rel == own or (own.endswith("/") and rel.startswith(own)) for own in OWN)


def per_component_identifiers(root: Path = ROOT) -> set[str]:
    """The module-level names the component-owned modules define under a component's spelling."""
    _, snakes = _spellings()
    found = set()
    for path in sorted(root.rglob("*.py")):
        if not _owned(path, root) or path.relative_to(root).as_posix().startswith(("adapters/", "gallery/")):
            continue  # (data modules define no per-component helpers)
        for node in ast.parse(path.read_text()).body:
            targets = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                targets = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                nodes = node.targets if isinstance(node, ast.Assign) else [node.target]
                targets = [t.id for t in nodes if isinstance(t, ast.Name)]
            found |= {t for t in targets if t.lower() not in snakes and any(_has_word(t, s) for s in snakes)}
    return found


def _has_word(identifier: str, snake: str) -> bool:
    """``snake`` as whole words of ``identifier`` ("rmsnorm" in "build_rmsnorm", "RMSNORM_PINS"; not "swiglus")."""
    return re.search(rf"(^|_){re.escape(snake)}(_|$)", identifier.lower().strip("_")) is not None


def _names_in(node: ast.AST, strings: set[str], identifiers: set[str]) -> list[tuple[int, str]]:
    hits = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in strings:
            hits.append((sub.lineno, repr(sub.value)))
        elif isinstance(sub, ast.Name) and sub.id in identifiers:
            hits.append((sub.lineno, sub.id))
        elif isinstance(sub, ast.Attribute) and sub.attr in identifiers:
            hits.append((sub.lineno, sub.attr))
    return hits


def _direct(node: ast.AST) -> list[ast.AST]:
    """The parts of ``node`` where a component name lists or selects components (a call's arguments inside them
    are the call's business: ``[f(x) for …]`` is not flagged for ``f``'s string arguments; ``__all__`` lists a
    module's names, not components)."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [e for e in node.elts if not isinstance(e, (ast.Call, ast.Lambda))]
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if k is not None]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        return [node.test]
    if isinstance(node, ast.Match):
        return [node.subject, *(c.pattern for c in node.cases)]
    return []


def _exported(tree: ast.Module) -> set[int]:
    """The nodes of ``__all__ = [...]``: a module's names, not a list of components."""
    values = [
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
    ]
    return {id(n) for v in values for n in ast.walk(v)}


def find_names(root: Path = ROOT) -> list[str]:
    """Every component name in a list, dict key, comparison, branch or match of a module under ``root`` that no
    component owns: "path:line: name"."""
    strings, _ = _spellings()
    identifiers = per_component_identifiers(root)
    out = []
    for path in sorted(root.rglob("*.py")):
        if _owned(path, root):
            continue
        tree = ast.parse(path.read_text())
        seen, exported = set(), _exported(tree)
        for node in ast.walk(tree):
            if id(node) in exported:
                continue
            for part in _direct(node):
                for line, name in _names_in(part, strings, identifiers):
                    if (line, name) not in seen:
                        seen.add((line, name))
                        out.append(f"{path.relative_to(root.parent).as_posix()}:{line}: {name}")
    return out


def test_no_generic_module_names_a_component_in_a_list_a_comparison_or_a_branch():
    assert find_names() == []


def laws_named_outside(root: Path = ROOT) -> list[str]:
    """Every ``law("<Component>", …)`` (a law registered for a component named by a string) in a module under
    ``root`` that no component owns: "path:line: name"."""
    names = {r.name for r in components.RECORDS.values()}
    out = []
    for path in sorted(root.rglob("*.py")):
        if _owned(path, root):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if called == "law" and node.args[0].value in names:
                out.append(f"{path.relative_to(root.parent).as_posix()}:{node.lineno}: {node.args[0].value!r}")
    return out


def test_a_law_of_one_component_is_defined_in_its_own_law_module():
    """A law written for one named component lives in ``laws/<component>.py``; a law along a generic axis is a
    family over the records (``@law(record.name)``). On main's tree before this change it finds 11: the code-path
    and stored-corpus laws (4 each, one per component, laws/paths.py and laws/stored.py), RMSNorm's domain law and
    the Block's reach and FFN-width laws (laws/domain.py, sequence.py, budget.py); now 0."""
    assert laws_named_outside() == []


def test_the_scan_finds_a_component_name_where_it_looks():
    """The scan itself: each context it checks, on a throwaway module (a scan that finds nothing proves nothing)."""
    strings, _ = _spellings()
    assert {"RMSNorm", "add_rmsnorm"} <= strings
    source = (
        'KINDS = ("RMSNorm", "SwiGLU")\n'
        'BY = {"Block": 1}\n'
        'if component == "AddRMSNorm":\n    pass\n'
        "y = 1 if build_rmsnorm else 2\n"
        'match component:\n    case "rmsnorm":\n        pass\n'
        'law("RMSNorm")\n'  # a call's argument: not a list of components
    )
    tree = ast.parse(source)
    law_call = tree.body[-1].value
    assert isinstance(law_call, ast.Call) and law_call.args[0].value in {r.name for r in components.RECORDS.values()}
    hits = sorted(
        {h for node in ast.walk(tree) for part in _direct(node) for h in _names_in(part, strings, {"build_rmsnorm"})}
    )
    assert hits == [
        (1, "'RMSNorm'"),
        (1, "'SwiGLU'"),
        (2, "'Block'"),
        (3, "'AddRMSNorm'"),
        (5, "build_rmsnorm"),
        (7, "'rmsnorm'"),
    ]


def test_the_component_owned_modules_exist():
    """Every path of ``OWN`` is a module or package of properties/ (a renamed file is not silently unscanned)."""
    for own in OWN:
        assert (ROOT / own).exists(), own
