"""``nanolm-verify pitfalls [NAME ...]``: the pitfall gallery, demonstrated for a student.

For each pitfall in ``properties.gallery.PITFALLS`` (the one catalogue of wrong implementations) it runs the
law designated to catch it against the wrong implementation and prints, wrapped to the terminal (80 columns
by default): what the mistake is and why people make it, the law, the shrunk counterexample with golden vs
actual vs bound (the law's failure message), and a line saying whether it was caught. Caught means the law's
own assertion failed (``cause == "law"``): a crash, a contract failure or a timeout of the wrong
implementation is reported as NOT caught. ``--reference`` also runs each law against the reference
(``nanolm_core``), which must pass it. Exit status 0 when every pitfall was caught as expected (or is a
declared known gap) and the reference passed, 1 otherwise, 2 for an unknown name.

``demonstrate_pitfall`` is the one verdict the CLI, docs/gallery.md and the kill-matrix test share.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from golden.formats import fmt
from properties.commands import arguments
from properties.commands.helptext import Formatter
from properties.gallery import KINDS, PITFALLS, Pitfall
from properties.running.loading import COMPONENTS, load
from properties.running.runner import LAWS, LawResult, Task, UsageError
from properties.running.session import RunOptions, Session

__all__ = [
    "Demo",
    "KillMatrix",
    "demonstrate",
    "demonstrate_pitfall",
    "explain",
    "kill_matrix",
    "register",
    "render_demo",
    "render_markdown",
    "wrap_block",
]

DEFAULT_WIDTH = 80


@dataclasses.dataclass
class Demo:
    """The outcome of demonstrating one pitfall: the law's result on it (and on the reference, if asked)."""

    pitfall: Pitfall
    result: Any  # runner.LawResult
    reference: Any | None = None  # LawResult of the same law on nanolm_core, when run

    @property
    def name(self) -> str:
        return self.pitfall.name

    @property
    def caught(self) -> bool:
        """The law's own assertion failed — not a crash, contract failure or timeout of the implementation."""
        return self.result.status == "failed" and self.result.cause == "law"

    @property
    def ok(self) -> bool:
        """As expected: caught (or a declared known gap, ``pitfall.pending``), and the reference (if run) passes."""
        expected = self.caught or bool(self.pitfall.pending)
        ref = self.reference
        ref_ok = ref is None or ref.status == "passed" or (bool(self.pitfall.pending) and ref.status == "skipped")
        return expected and ref_ok  # a pending entry's law may not run here at all (no accelerator): skipped

    @property
    def outcome(self) -> str:
        """ "caught", or why not: the status, with the cause of a failure that is not the law's."""
        if self.caught:
            return "caught"
        r = self.result
        return f"{r.status} (cause {r.cause})" if r.status == "failed" else r.status


REFERENCE = "nanolm_core"


def _task(law: Any, dtype: Any, device: str, profile: str, seed: int | None, impl: str = REFERENCE) -> Task:
    return Task(law.id, law.component, fmt(dtype).name, device, profile, seed, law.summary, impl=impl)


def run_tasks(tasks: list[Task], options: RunOptions | None = None) -> list[LawResult]:
    """Run tasks that each name their implementation: in the run session's worker processes (``options``; one
    pool, each worker loads an implementation of the catalogue the first time a task names it), or — ``options``
    None, for tests — in this process."""
    if options is None:
        return [t.run(load(t.impl or REFERENCE)) for t in tasks]
    with Session(options) as session:
        results = session.results(REFERENCE, tasks)
    if session.interrupted:
        raise KeyboardInterrupt  # the run was interrupted: no partial gallery
    return results


def demonstrate_all(
    pitfalls: list[Pitfall],
    *,
    profile: str = "ci",
    seed: int | None = None,
    device: str = "cpu",
    reference: bool = False,
    options: RunOptions | None = None,
) -> list[Demo]:
    """Run each pitfall's law against its wrong implementation (and optionally against the reference)."""
    tasks = []
    for p in pitfalls:
        law = LAWS[p.law]
        tasks.append(_task(law, p.torch_dtype, device, profile, seed, p.module))
        if reference:
            tasks.append(_task(law, p.torch_dtype, device, profile, seed))
    results = iter(run_tasks(tasks, options))
    return [Demo(p, next(results), next(results) if reference else None) for p in pitfalls]


def demonstrate_pitfall(
    pitfall: Pitfall, *, profile: str = "ci", seed: int | None = None, device: str = "cpu", reference: bool = False
) -> Demo:
    """Run ``pitfall.law`` against its wrong implementation (and optionally against the reference), in process."""
    return demonstrate_all([pitfall], profile=profile, seed=seed, device=device, reference=reference)[0]


def demonstrate(
    name: str, *, profile: str = "ci", seed: int | None = None, device: str = "cpu", reference: bool = False
) -> Demo:
    """Demonstrate the catalogue's pitfall ``name`` (see ``demonstrate_pitfall``)."""
    return demonstrate_pitfall(PITFALLS[name], profile=profile, seed=seed, device=device, reference=reference)


# ---------------------------------------------------------------------------------------------- text


def wrap_block(text: str, width: int, indent: str = "") -> list[str]:
    """Reflow ``text`` to ``width`` columns: paragraphs are reflowed, lines indented by ≥ 4 spaces are kept
    (formulas), over-long kept lines are folded with a ↪ marker."""
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.extend(
                textwrap.wrap(
                    " ".join(paragraph), width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
                )
            )
            paragraph.clear()

    for line in text.splitlines():
        if not line.strip():
            flush()
            out.append("")
        elif line.startswith("    "):
            flush()
            out.extend(_fold(indent + line.rstrip(), width, indent + "      ↪ "))
        else:
            paragraph.append(line.strip())
    flush()
    while out and not out[-1]:
        out.pop()
    return out


def _fold(line: str, width: int, cont: str) -> list[str]:
    """Split a line that must keep its layout into pieces of at most ``width`` columns."""
    if len(line) <= width:
        return [line]
    pieces = [line[:width]]
    rest = line[width:]
    step = max(10, width - len(cont))
    while rest:
        pieces.append(cont + rest[:step])
        rest = rest[step:]
    return pieces


def _message_lines(message: str, width: int) -> list[str]:
    """The law's failure message for a student: each line wrapped on its own (continuations indented), the
    reproduction command split into shell-continued lines, Hypothesis's @reproduce_failure blob left out."""
    out: list[str] = []
    lines = message.strip().splitlines()
    blob = next(
        (
            i
            for i, line in enumerate(lines)
            if "reproduce_failure" in line or line.startswith("You can reproduce this test case")
        ),
        None,
    )
    if blob is not None:
        lines = lines[:blob]
    for line in lines:
        line = line.rstrip()
        if line.startswith("reproduce: "):
            out += _command_lines(line.removeprefix("reproduce: "), width)
            continue
        lead = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]
        if len(line) <= width - 2:
            out.append("  " + line)
            continue
        out.extend(
            textwrap.wrap(
                line.strip(),
                width,
                initial_indent="  " + lead,
                subsequent_indent="  " + lead + "    ",
                break_on_hyphens=False,
            )
        )
    while out and not out[-1].strip():
        out.pop()
    return out


def _command_lines(command: str, width: int) -> list[str]:
    """``reproduce:`` and the command, broken between options with shell continuations (copy-paste safe)."""
    words, tokens = command.split(), []
    while words:  # keep "--option value" together
        word = words.pop(0)
        if word.startswith("--") and words and not words[0].startswith("--"):
            word += " " + words.pop(0)
        tokens.append(word)
    out, current = ["  reproduce:"], "    "
    for token in tokens:
        if current.strip() and len(current) + 1 + len(token) + 2 > width:
            out.append(current + " \\")
            current = "      "
        current += ("" if not current.strip() else " ") + token
    out.append(current)
    return out


def _doc(pitfall: Pitfall) -> str:
    return pitfall.docstring.strip()


def explain(pitfall: Pitfall | str) -> str:
    """The pitfall's docstring (mistake, why, evidence, the catching law) without its title line."""
    doc = _doc(PITFALLS[pitfall] if isinstance(pitfall, str) else pitfall)
    body = doc.split("\n", 1)[1].strip() if "\n" in doc else doc
    return body.replace("``", "")


def _title(pitfall: Pitfall) -> str:
    return (_doc(pitfall) or pitfall.name).splitlines()[0].removeprefix("Pitfall:").strip()


def examples_needed(result: Any) -> str:
    """How much it took to catch: "2" examples until the first failure (Hypothesis laws), "1 check" for a plain
    law, "exhaustive (65280 values)" for a law that checks every value of a dtype at once."""
    law = LAWS.get(result.law_id)
    if law is not None and law.uses_hypothesis:
        return str(result.found_after or result.examples)
    return "1 check" if result.examples <= 1 else f"exhaustive ({result.examples} values)"


def _describe_input(worst: dict[str, Any] | None) -> str:
    if not worst:
        return "(no input description recorded)"
    return ", ".join(f"{k}={v}" for k, v in worst.items())


def render_demo(demo: Demo, index: int, total: int, width: int = DEFAULT_WIDTH) -> list[str]:
    """The student-facing text of one demonstration, at most ``width`` columns per line."""
    p, r = demo.pitfall, demo.result
    lines = ["═" * width]
    lines += textwrap.wrap(f"[{index}/{total}] {demo.name}: {_title(p)}", width, subsequent_indent="    ")
    lines += textwrap.wrap(
        f"wrong implementation: {p.module} ({p.component}; {p.kind})",
        width,
        subsequent_indent="    ",
        break_on_hyphens=False,
    )
    lines += textwrap.wrap(
        f"law: {p.law} · {r.dtype} · {r.device} · profile {r.profile}", width, subsequent_indent="    "
    )
    lines.append("─" * width)
    lines += wrap_block(explain(p), width)
    lines.append("")
    lines += textwrap.wrap(f"The law: {r.law}", width, subsequent_indent="  ")
    lines.append("")
    if demo.caught:
        needed = examples_needed(r)
        found = f"found after {needed} example(s)" if needed.isdigit() else needed
        lines.append(f"Counterexample (shrunk; {found}):")
        lines += textwrap.wrap(_describe_input(r.worst_input), width, initial_indent="  ", subsequent_indent="    ")
        lines.append("What the law saw (golden, actual, bound):")
        lines += _message_lines(r.message, width)
        lines.append("")
        lines += textwrap.wrap(f"✔ CAUGHT: {p.law} failed on {demo.name} ({r.dtype}), as it should.", width)
    elif p.pending:
        lines += textwrap.wrap(
            f"… NOT CAUGHT YET (a known gap): {p.law} returned {demo.outcome} after {r.examples} "
            f"example(s) in the {r.profile} profile. Why: {p.pending}.",
            width,
        )
    else:
        lines += textwrap.wrap(
            f"✘ NOT CAUGHT: {p.law} returned {demo.outcome} on {demo.name} after {r.examples} "
            f"example(s) — the catalogue expects the law's own assertion to fail (cause law).",
            width,
        )
        if r.message:
            lines += _message_lines(r.message, width)
    if demo.reference is not None:
        ref = demo.reference
        mark = "✔" if ref.status == "passed" else "✘"
        lines += textwrap.wrap(
            f"{mark} reference nanolm_core: {ref.status} on the same law ({ref.examples} example(s)).", width
        )
        if ref.status != "passed" and ref.message:
            lines += _message_lines(ref.message, width)
    return lines


def _summary(demos: Iterable[Demo], width: int) -> list[str]:
    demos = list(demos)
    rows = []
    for d in demos:
        if d.caught:
            needed = examples_needed(d.result)
            status = f"all {d.result.examples}" if needed.startswith("exhaustive") else needed
        elif d.pitfall.pending:
            status = "pending"
        else:
            status = f"NOT caught: {d.outcome}"
        if d.reference is not None and d.reference.status != "passed":
            status += f"; reference {d.reference.status}"
        rows.append(
            ("✔" if d.ok and d.caught else "…" if d.ok else "✘", d.name, d.pitfall.law.split(".", 1)[1], status)
        )
    name_w = max(len(r[1]) for r in rows)
    law_w = max(len(r[2]) for r in rows)
    stat_w = max(len(r[3]) for r in rows)
    law_w = max(8, min(law_w, width - name_w - stat_w - 5))
    lines = [
        "═" * width,
        "Summary: each pitfall, the law that catches it, and the examples it took",
        f"  {'pitfall':<{name_w}} {'law':<{law_w}} examples",
    ]
    for mark, name, law, status in rows:
        law = law if len(law) <= law_w else law[: law_w - 1] + "…"
        lines.append(f"{mark} {name:<{name_w}} {law:<{law_w}} {status}")
    caught = sum(d.caught for d in demos)
    pending = sum(d.ok and not d.caught for d in demos)
    lines.append(
        f"{caught} of {len(demos)} pitfalls caught"
        + (f", {pending} pending (a known gap, see above)" if pending else "")
        + "."
    )
    lines.append("('all N': an exhaustive law checked N values at once.)")
    return lines


# ---------------------------------------------------------------------------------------------- kill matrix


@dataclasses.dataclass
class KillMatrix:
    """Every catalogue entry against its designated law (with the reference on the same law and dtype) and
    against every other law of its component; the reference against every law."""

    profile: str
    demos: dict[str, Demo]  # name → the verdict of its designated law, reference included
    rows: dict[str, dict[str, Any]]  # name → {law id: LawResult} for every law of its component
    reference: dict[str, Any]  # law id → LawResult of nanolm_core (fp32 where the law applies)

    @property
    def ok(self) -> bool:
        """Every entry as expected, and the reference passes every law that runs here (an accelerator law skips)."""
        demos_ok = all(d.ok for d in self.demos.values())
        return demos_ok and all(r.status in ("passed", "skipped") for r in self.reference.values())


def _dtype_for(law: Any, preferred: Any) -> Any:
    wanted = fmt(preferred).dtype
    return wanted if wanted in law.dtypes else law.dtypes[0]


def kill_matrix(profile: str = "ci", device: str = "cpu", options: RunOptions | None = None) -> KillMatrix:
    """Run the catalogue: each entry's designated law (and the reference on it), then every other law of its
    component in the entry's dtype where the law applies (else the law's first dtype); ``options``: see
    ``run_tasks``."""
    keys: dict[tuple[str, str, str], int] = {}  # (implementation, law id, dtype) → task index
    tasks: list[Task] = []

    def want(impl: str, law: Any, dtype: Any) -> tuple[str, str, str]:
        key = (impl, law.id, fmt(dtype).name)
        if key not in keys:
            keys[key] = len(tasks)
            tasks.append(_task(law, dtype, device, profile, None, impl))
        return key

    plan: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
    for name, p in PITFALLS.items():
        designated = want(p.module, LAWS[p.law], p.torch_dtype)
        on_ref = want(REFERENCE, LAWS[p.law], p.torch_dtype)
        row = {
            law_id: want(p.module, law, _dtype_for(law, p.dtype))
            for law_id, law in LAWS.items()
            if law.component == p.component
        }
        plan[name] = (designated, on_ref, row)
    ref_keys = {law_id: want(REFERENCE, law, _dtype_for(law, "fp32")) for law_id, law in LAWS.items()}
    results = run_tasks(tasks, options)
    got = {key: results[i] for key, i in keys.items()}
    demos = {name: Demo(PITFALLS[name], got[d], got[r]) for name, (d, r, _) in plan.items()}
    rows = {name: {law_id: got[k] for law_id, k in row.items()} for name, (_, _, row) in plan.items()}
    return KillMatrix(profile, demos, rows, {law_id: got[k] for law_id, k in ref_keys.items()})


_NOT_THE_LAW = {"contract": "C", "crash": "X", "timeout": "T"}


def _cell(result: Any, named: bool) -> str:
    if result.status == "failed" and result.cause == "law":
        needed = examples_needed(result)
        text = "✔ " + ("all" if needed.startswith("exhaustive") else needed.removesuffix(" check"))
    elif result.status == "failed":
        text = _NOT_THE_LAW.get(result.cause or "", "?")
    else:
        text = {"passed": "·", "skipped": "–", "error": "E"}.get(result.status, "?")
    return f"**{text}**" if named else text


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _evidence(p: Pitfall) -> str:
    refs = ", ".join(p.evidence)
    if not refs:
        return "—"
    return f"related: {refs}" if p.kind == "test-only" else refs


def render_markdown(km: KillMatrix) -> str:
    """docs/gallery.md: the catalogue, each law's designated entries, and the full kill matrix per component."""
    kinds = Counter(p.kind for p in PITFALLS.values())
    lines = [
        "# The catalogue of wrong implementations and its kill matrix",
        "",
        f"Generated by `nanolm-verify pitfalls --markdown docs/gallery.md` (profile `{km.profile}`, CPU); the same "
        "verdicts are required by `tests/commands/test_kill_matrix.py`. Each entry is a small module in "
        "`properties/gallery/` that follows the implementation contract with one mistake — a subclass of the "
        "reference that overrides the one wrong thing (for attention, one named step of `nanolm_core.Attention`); "
        "its docstring says what the mistake is, why people make it, where it bit a real project, and which law "
        "catches it. Run `nanolm-verify pitfalls NAME` to see the explanation, the shrunk counterexample and "
        "golden vs actual vs bound; check one like any implementation with "
        "`nanolm-verify check properties.gallery.NAME`.",
        "",
        f"{len(PITFALLS)} entries: " + ", ".join(f"{kinds[k]} {k}" for k in KINDS) + ". A *course mistake* is "
        "one of the course's seeds, a *real-world bug* hit a public project (its evidence), a *test-only* entry is "
        "a mutation kept to prove that a law has power (evidence, if any, is related).",
        "",
        "## The catalogue",
        "",
        "Caught means the designated law's own assertion failed (cause `law`); a crash, a contract failure or a "
        "timeout of the wrong implementation does not count.",
        "",
        "| # | pitfall | kind | mistake | designated law | dtype | caught after | evidence | reference |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, (name, p) in enumerate(PITFALLS.items(), 1):
        d = km.demos[name]
        if d.caught:
            needed = examples_needed(d.result)
        else:
            needed = f"pending ({d.outcome}): {p.pending}" if p.pending else f"NOT CAUGHT: {d.outcome}"
        ref_status = d.reference.status if d.reference is not None else "not run"
        lines.append(
            f"| {i} | `{name}` | {p.kind} | {_md(p.title)} | `{p.law}` | {p.dtype} | {_md(needed)} | "
            f"{_evidence(p)} | {ref_status} |"
        )
    lines += [
        "",
        "“Caught after”: Hypothesis examples until the first failure (before shrinking), explicit `@example` "
        "pins included; “1 check”: a law without `@given` (one deterministic check); “exhaustive”: a law that "
        "checks every value of the dtype in one call. “Reference”: `nanolm_core` on the same law and dtype.",
        "",
        "## Every law and the wrong implementations designated to it",
        "",
        "| law | dtypes | designated entries |",
        "|---|---|---|",
    ]
    for law_id, law in LAWS.items():
        entries = [
            f"`{n}`" + ("" if km.demos[n].caught else " (pending)") for n, p in PITFALLS.items() if p.law == law_id
        ]
        dtypes = ", ".join(fmt(d).name for d in law.dtypes)
        lines.append(f"| `{law_id}` | {dtypes} | {', '.join(entries) or '**none**'} |")
    lines += [
        "",
        "## The kill matrix",
        "",
        "Every entry against every law of its component, in the entry's dtype where the law applies (else the "
        "law's own dtype). `✔ n`: the law's assertion fails the entry (caught after n examples; `✔ all`: an "
        "exhaustive law); `·`: passes; `–`: skipped (dtype not applicable); failed for another cause: `C` "
        "contract, `X` crash, `T` timeout (not a catch); `E`: error of the suite. **Bold**: the designated law. "
        "The last row is the reference, which must pass every law.",
    ]
    for component in COMPONENTS:
        law_ids = [law_id for law_id, law in LAWS.items() if law.component == component]
        names = [n for n, p in PITFALLS.items() if p.component == component]
        lines += [
            "",
            f"### {component}",
            "",
            "Columns: " + ", ".join(f"**{j}** `{law_id.split('.', 1)[1]}`" for j, law_id in enumerate(law_ids, 1)),
            "",
        ]
        lines.append("| entry | " + " | ".join(str(j) for j in range(1, len(law_ids) + 1)) + " |")
        lines.append("|---|" + "---|" * len(law_ids))
        for name in names:
            cells = [_cell(km.rows[name][law_id], law_id == PITFALLS[name].law) for law_id in law_ids]
            lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
        lines.append("| *nanolm_core* | " + " | ".join(_cell(km.reference[law_id], False) for law_id in law_ids) + " |")
    caught = [n for n, d in km.demos.items() if d.caught]
    pending = [n for n, p in PITFALLS.items() if p.pending and n not in caught]
    lines += [
        "",
        f"{len(caught)} of {len(PITFALLS)} entries are caught by their designated law in the `{km.profile}` profile"
        + (f"; pending (known gaps, see the catalogue): {', '.join(pending)}" if pending else "")
        + ".",
        "",
    ]
    return "\n".join(lines) + figures_section()


FIGURES = (
    (
        "rmsnorm_bf16_error_vs_d.png",
        "bf16_accumulation",
        "RMSNorm in bf16, error in ULPs against golden vs D: the sum of squares accumulated in fp32 (the reference) "
        "stays correctly rounded; accumulated left to right in bf16 it crosses the suite's 2-ULP bound at D ≈ 32 and "
        "grows to hundreds of ULPs; a pairwise bf16 tree stays near 1 ULP, inside the bound.",
    ),
    (
        "eps_placement.png",
        "eps_outside_sqrt",
        "x/(rms + eps) against x/√(ms + eps) vs the input's RMS: below fp32 rounding at unit scale, 41% at rms = 1e-3.",
    ),
    (
        "silu_cancellation.png",
        "silu_cancellation",
        "silu(z) in bf16: torch's F.silu vs z·(1 − σ(−z)), whose relative error reaches 100% for z < −6.24.",
    ),
    (
        "grad_norm_vs_depth.png",
        "post_norm",
        "Gradient through a 32-layer stack: along the residual path pre-norm passes it unchanged, post-norm rescales "
        "it at every layer (the course's 0.9³² ≈ 0.03 story); with the branches' Jacobians included (right panel), the "
        "total gradient at initialisation does not decay in either: pre-norm's identity path holds for any weights, "
        "post-norm's factor depends on ‖x + f(x)‖ at every layer.",
    ),
    (
        "rmsnorm_geometry.png",
        "mean_subtraction",
        "RMSNorm maps every row to the sphere of radius √D; LayerNorm (= RMSNorm after centring) to its great circle "
        "⊥ 𝟏 — what mean subtraction throws away.",
    ),
    # AddRMSNorm
    (
        "add_norm_orders.png",
        "add_norm_half_sum_of_squares",
        "AddRMSNorm in 16 bits vs D (a small branch on a stream of mean 0.5): the norm of the rounded h (unfused: "
        "the reference, vLLM) and of the unrounded fp32 sum (fused kernels, ONNX Runtime) differ by one ULP on a "
        "quarter of the elements at every D — the rounding of h, not of the reduction —, and both stay inside the "
        "suite's bound (headroom ≈ 0.5 and 0.3); Σh² accumulated in bf16 crosses it at D ≈ 64 and grows with D.",
    ),
)


def figures_section() -> str:
    """The figures (made by ``nanolm-verify plot all --out docs``) that illustrate pitfalls, as Markdown."""
    lines = ["## Figures", "", "Made by `nanolm-verify plot all --out docs`.", ""]
    for png, pitfall, caption in FIGURES:
        lines += [f"### `{pitfall}` — {png}", "", f"![{png}]({png})", "", caption, ""]
    return "\n" + "\n".join(lines)


# ---------------------------------------------------------------------------------------------- CLI


def _list(width: int, out: TextIO) -> int:
    name_w = max(map(len, PITFALLS))
    for name, p in PITFALLS.items():
        line = f"{name:<{name_w}}  {p.title}"
        print(line if len(line) <= width else line[: width - 1] + "…", file=out)
    return 0


def _run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    width = max(40, args.width)
    if args.list:
        return _list(width, out)
    try:
        selection = arguments.selection(args, laws=False)
        options = arguments.run_options(args, selection.profile)
    except UsageError as exc:
        print(f"nanolm-verify pitfalls: error: {exc}", file=sys.stderr)
        return 2
    device = selection.devices[0]  # the catalogue is demonstrated on one device: the first selected (auto: cpu)
    if args.markdown:
        km = kill_matrix(selection.profile, device, options)
        Path(args.markdown).write_text(render_markdown(km), encoding="utf-8")
        print(f"wrote {args.markdown}", file=out)
        return 0 if km.ok else 1
    names = args.names or list(PITFALLS)
    unknown = [n for n in names if n not in PITFALLS]
    if unknown:
        print(
            f"nanolm-verify pitfalls: unknown pitfall {', '.join(unknown)}; "
            f"`nanolm-verify pitfalls --list` shows the {len(PITFALLS)} known ones",
            file=sys.stderr,
        )
        return 2
    pitfalls = [PITFALLS[n] for n in names]
    demos = demonstrate_all(
        pitfalls, profile=selection.profile, seed=selection.seed, device=device, reference=args.reference,
        options=options,
    )  # fmt: skip
    for i, demo in enumerate(demos, 1):
        print("\n".join(render_demo(demo, i, len(names), width)), file=out, flush=True)
    print("\n".join(_summary(demos, width)), file=out)
    return 0 if all(d.ok for d in demos) else 1


def register(subparsers: Any) -> None:
    """Add ``pitfalls [NAME ...]`` to the ``nanolm-verify`` parser."""
    parser = subparsers.add_parser(
        "pitfalls",
        help="demonstrate the gallery of wrong implementations and the laws that catch them",
        description="For each pitfall: the mistake, why people make it, the law that catches it,\n"
        "the shrunk counterexample (golden vs actual vs bound) and whether it was caught.",
        epilog="examples:\n"
        "  nanolm-verify pitfalls --list\n"
        "  nanolm-verify pitfalls eps_outside_sqrt --profile ci\n"
        "  nanolm-verify pitfalls --markdown docs/gallery.md --profile ci\n\n"
        "exit status:\n"
        "  0  every pitfall was caught as expected\n"
        "  1  a pitfall was not caught (or the reference failed, with --reference)\n"
        "  2  usage error: an unknown pitfall or argument",
        formatter_class=Formatter,
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="pitfalls to show (default: all; see --list)")
    parser.add_argument("--list", action="store_true", help="list the pitfalls and exit")
    what = arguments.add_selection(parser, laws=False)
    what.add_argument("--reference", action="store_true", help="also run each law on nanolm_core (must pass)")
    out = parser.add_argument_group("output", "example: --markdown docs/gallery.md --width 100")
    out.add_argument("--markdown", metavar="PATH", help="run the full kill matrix and write it as Markdown")
    out.add_argument("--width", type=int, default=DEFAULT_WIDTH, help="wrap the text to this many columns (80)")
    arguments.add_run_options(parser, database=False)  # the catalogue's verdicts are reproducible as shipped
    parser.set_defaults(func=_run)
