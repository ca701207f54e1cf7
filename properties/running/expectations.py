"""Expected failures and skips per implementation, as data files beside this module (array-api-tests style).

``properties/expectations/<impl-id>.txt`` lists, one entry a line::

    # comment
    <law-id glob>[<dtype glob>-<device glob>]  <xfail|skip>  <reason, free text to the end of the line>
    <pytest node id>                           <xfail|skip>  <reason>

    RMSNorm.*[fp64]                       xfail  LlamaRMSNorm computes in fp32 even for fp64 input
    Block.block_matches_golden[bf16-cuda] skip   kernel hangs on sm_80 (issue #12)
    tests/test_mine.py::test_norm[bf16]   xfail  our bf16 path is a known 2-ULP kernel (mypkg#7)

The bracket of a law entry is optional (all dtypes and devices); ``[fp64]`` means every device. Globs are
``fnmatch`` patterns on the law id, the dtype name (fp64/fp32/fp16/bf16) and the device (cpu/cuda).

A line whose first word contains ``::`` is a **pytest node id**, as pytest prints it (``FAILED <node id>``; the
array-api-tests ``--xfails-file`` idea): under pytest it covers the test of that id — its file part may be any
tail of the path (``test_laws.py::…``), the module's dotted name (``properties.conformance.test_laws::…``) or empty
(``::test_law[…]``, how pytest names a test of an installed package); ``*`` and ``?`` are globs, brackets are
literal. The conformance tests' ids name a law run — ``test_law[<law id>-<dtype>-<device>]``
(:func:`param_id`) — so such a line also covers that law × dtype × device wherever it runs (``check`` included).

Applying expectations to results (``apply``) maps a law × dtype × device result:
  failed  + xfail → "xfailed" (expected; the run still passes), message prefixed with the reason;
  passed  + xfail → "xpassed" (unexpected pass: reported so the entry gets removed; the run still passes);
  any     + skip  → "skipped" with the reason (``skip_reason`` lets a runner avoid running it at all);
  error stays "error" (a suite bug is never an expected outcome).
Under pytest the plugin makes them pytest's own outcomes instead: a ``skip`` entry skips the test, an ``xfail``
entry marks it ``xfail`` (an unexpected pass is pytest's XPASS, and fails the session with ``xfail_strict``).
An entry that matches no registered law id (a typo, a renamed law) raises an ``ExpectationWarning``.

Users keep their own file in the same format and pass it with ``nanolm-verify check|compare --expectations FILE``
or ``pytest --nanolm-expectations FILE``: ``combined`` puts the user's entries first (the first matching entry
decides, so a user line overrides a shipped one), then the file shipped for the implementation.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from properties.library.laws import LAWS
from properties.library.subject import Implementation
from properties.running.loading import adapters

__all__ = [
    "ACTIONS",
    "DIRECTORY",
    "Expectation",
    "ExpectationError",
    "ExpectationWarning",
    "apply",
    "combined",
    "find",
    "load",
    "param_id",
    "parse",
    "path_for",
    "read",
    "skip_reason",
    "summarize",
    "unmatched",
]

DIRECTORY = Path(__file__).parents[1] / "expectations"  # properties/expectations/<id>.txt
ACTIONS = ("xfail", "skip")
_LINE = re.compile(r"^(?P<law>[^\s\[]+)(?:\[(?P<where>[^\]]*)\])?\s+(?P<action>\S+)\s*(?P<reason>.*)$")


class ExpectationError(ValueError):
    """An expectation file cannot be parsed (names the file and line)."""


class ExpectationWarning(UserWarning):
    """An expectation entry matches nothing, or a law expected to fail passed."""


@dataclasses.dataclass(frozen=True)
class Expectation:
    """One entry: which results it covers (globs) and what is expected of them, with the reason.

    ``law``/``dtype``/``device``: the law runs it covers (None for a node id that names no law run); ``node``: the
    pytest node id it was written as, if it was."""

    law: str | None
    dtype: str
    device: str
    action: str
    reason: str
    source: str = "<string>"
    line: int = 0
    node: str | None = None

    def matches(self, law_id: str, dtype: str, device: str, nodes: Sequence[str] = ()) -> bool:
        """Does it cover this law × dtype × device run, or (under pytest) the test whose node ids are ``nodes``?"""
        if self.node is not None and any(_node_matches(self.node, n) for n in nodes):
            return True
        return (
            self.law is not None
            and fnmatch.fnmatchcase(law_id, self.law)
            and fnmatch.fnmatchcase(dtype, self.dtype)
            and fnmatch.fnmatchcase(device, self.device)
        )

    @property
    def pattern(self) -> str:
        return self.node or f"{self.law}[{self.dtype}-{self.device}]"

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def parse(text: str, source: str = "<string>") -> list[Expectation]:
    """Parse the expectation format (module docstring); ExpectationError names the bad line."""
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):  # only whole-line comments: reasons may cite "org/repo#123"
            continue
        m = _LINE.match(line)
        if m is None:
            raise ExpectationError(
                f"{source}:{number}: cannot parse {raw!r}; expected '<law-id>[<dtype>-<device>] <xfail|skip> <reason>'"
            )
        action, reason = m["action"].lower(), m["reason"].strip()
        if action not in ACTIONS:
            raise ExpectationError(f"{source}:{number}: unknown action {m['action']!r}; expected one of {ACTIONS}")
        if not reason:
            raise ExpectationError(f"{source}:{number}: {m['law']} {action} needs a reason")
        if "::" in m["law"]:  # a pytest node id
            node = m["law"] + (f"[{m['where']}]" if m["where"] is not None else "")
            run = _law_run(node)
            law, dtype, device = run if run else (None, "*", "*")
            entries.append(Expectation(law, dtype, device, action, reason, source, number, node=node))
            continue
        dtype, _, device = (m["where"] or "*").partition("-")
        entries.append(
            Expectation(m["law"], dtype.strip() or "*", device.strip() or "*", action, reason, source, number)
        )
    return entries


def param_id(law_id: str, dtype: str, device: str) -> str:
    """The parameter id of a law run in the conformance tests: ``test_law[<law id>-<dtype>-<device>]``."""
    return f"{law_id}-{dtype}-{device}"


_TEST_LAW = re.compile(r"::test_law\[(?P<id>[^\]]+)\]$")


def _law_run(node: str) -> tuple[str, str, str] | None:
    """(law id, dtype, device) of a conformance test's node id (``…::test_law[<param_id>]``), else None."""
    m = _TEST_LAW.search(node)
    parts = m["id"].rsplit("-", 2) if m else []
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None


def _literal_brackets(pattern: str) -> str:
    """An fnmatch pattern in which brackets (pytest's parameter ids) are literal; ``*`` and ``?`` stay globs."""
    return "".join({"[": "[[]", "]": "[]]"}.get(c, c) for c in pattern)


def _node_matches(pattern: str, node: str) -> bool:
    """Does a node-id entry cover ``node`` (module docstring: its file part may be a tail of the path, the
    dotted module name, or empty)?"""
    want_file, _, want_test = pattern.partition("::")
    file, _, test = node.partition("::")
    if not fnmatch.fnmatchcase(test, _literal_brackets(want_test)):
        return False
    if not want_file:
        return True
    glob = _literal_brackets(want_file)
    return any(fnmatch.fnmatchcase(file, g) for g in (glob, f"*/{glob}", f"*.{glob}"))


def path_for(impl: Implementation | str) -> Path:
    """The expectation file of an implementation: DIRECTORY/<short id>.txt; other modules use their own name."""
    spec = impl if isinstance(impl, str) else impl.spec
    module = getattr(impl, "module", None)  # a module (loaded here) or its name (reported by a worker)
    module = adapters().get(spec, spec) if module is None else getattr(module, "__name__", module)
    for short_id, target in adapters().items():
        if spec == short_id or module == target:
            return DIRECTORY / f"{short_id}.txt"
    return DIRECTORY / f"{Path(spec).stem if spec.endswith('.py') else spec}.txt"


def load(impl: Implementation | str, path: str | Path | None = None) -> list[Expectation]:
    """The expectations for ``impl`` (from ``path`` if given); [] when it has no file."""
    file = Path(path) if path is not None else path_for(impl)
    if not file.is_file():
        if path is not None:
            raise ExpectationError(f"expectation file {file} does not exist")
        return []
    return parse(file.read_text(encoding="utf-8"), source=str(file))


def read(path: str | Path) -> list[Expectation]:
    """A user's expectation file (``--expectations FILE``): ExpectationError when it is missing or malformed."""
    file = Path(path)
    if file.is_dir():
        raise ExpectationError(f"expectation file {file} is a directory; give a file")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExpectationError(f"expectation file {file} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpectationError(f"expectation file {file} cannot be read: {exc}") from None
    return parse(text, source=str(file))


def combined(
    impl: Implementation | str, files: Iterable[str | Path] = (), *, shipped: bool = True
) -> list[Expectation]:
    """The expectations of a run: every user file in order, then (``shipped``) the implementation's own file."""
    entries = [e for f in files for e in read(f)]
    return entries + (load(impl) if shipped else [])


def find(
    expectations: Iterable[Expectation], law_id: str, dtype: str, device: str, nodes: Sequence[str] = ()
) -> Expectation | None:
    """The first entry covering this result (file order decides between overlapping entries); ``nodes``: under
    pytest, the node ids of the test that runs it (``Expectation.matches``)."""
    return next((e for e in expectations if e.matches(law_id, dtype, device, nodes)), None)


def skip_reason(expectations: Iterable[Expectation], law_id: str, dtype: str, device: str) -> str | None:
    """For runners: the reason not to run this law × dtype × device at all (a ``skip`` entry), else None."""
    entry = find(expectations, law_id, dtype, device)
    return f"expected skip ({entry.where}): {entry.reason}" if entry and entry.action == "skip" else None


def unmatched(expectations: Iterable[Expectation], law_ids: Iterable[str] | None = None) -> list[Expectation]:
    """Entries whose law pattern matches no registered law id (``law_ids`` defaults to the registry)."""
    ids = _registered_law_ids() if law_ids is None else list(law_ids)  # (a node id naming no law run: not known)
    return [e for e in expectations if e.law is not None and not any(fnmatch.fnmatchcase(i, e.law) for i in ids)]


def apply(
    results: Sequence[Any],
    impl: Implementation | str,
    expectations: Sequence[Expectation] | None = None,
    *,
    warn: bool = True,
) -> list[Any]:
    """Results with expectations applied (new objects; the inputs are not modified). See the module docstring.

    ``results`` are ``properties.running.runner.LawResult``s (anything with law_id, dtype, device, status, message).
    Warns (ExpectationWarning) about entries that match no registered law, and about every unexpected pass.
    """
    entries = load(impl) if expectations is None else list(expectations)
    if warn and entries:
        known = {r.law_id for r in results} | set(_registered_law_ids())
        for e in unmatched(entries, known):
            warnings.warn(
                f"{e.where}: expectation {e.pattern} matches no known law id", ExpectationWarning, stacklevel=2
            )
    out = []
    for result in results:
        entry = find(entries, result.law_id, result.dtype, result.device)
        out.append(result if entry is None else _expect(result, entry, warn))
    return out


def _registered_law_ids() -> list[str]:
    """Every registered law id."""
    return list(LAWS)


def _expect(result: Any, entry: Expectation, warn: bool) -> Any:
    if entry.action == "skip":
        return dataclasses.replace(result, status="skipped", message=f"expected skip ({entry.where}): {entry.reason}")
    if result.status == "failed":
        return dataclasses.replace(
            result, status="xfailed", message=f"expected failure ({entry.where}): {entry.reason}\n{result.message}"
        )
    if result.status == "passed":
        text = (
            f"{result.law_id} [{result.dtype}, {result.device}] passed but is expected to fail "
            f"({entry.where}: {entry.reason}); before removing the entry, rerun it alone (`--only {result.law_id} "
            f"--dtype {result.dtype}`): a compiled implementation's kernel may depend on the shapes compiled earlier "
            "in the same worker, so this pass may not be the law's own verdict; remove the entry if it passes there"
        )
        if warn:
            warnings.warn(text, ExpectationWarning, stacklevel=3)
        return dataclasses.replace(result, status="xpassed", message=text)
    return result  # skipped stays skipped; error stays error


def summarize(results: Iterable[Any]) -> dict[str, int]:
    """Counts per status, including xfailed / xpassed."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts
