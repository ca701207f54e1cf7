"""Markdown: compare's report.md, the accuracy league (docs/league.md) and the catalogue's page (docs/gallery.md),
laid out from the results model."""

from __future__ import annotations

import signal
from collections import Counter
from typing import Any

from golden.formats import fmt
from properties.commands.results import (
    COMPARE_INTRO,
    DTYPES,
    KillMatrix,
    components,
    conventions_line,
    declared_xfails,
    examples_needed,
    findings,
    headroom_text,
    highlights,
    kill_cell,
    league_rows,
    matrix,
    overview_lines,
    overview_rows,
    problems,
    unexpected,
)
from properties.gallery import KINDS, PITFALLS, Pitfall
from properties.library import components as records
from properties.running.runner import LAWS

__all__ = ["FIGURES", "compare", "gallery", "league"]


def _escape(text: Any) -> str:
    """Text for a table cell or a list item: no pipe, no line break."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _bold(text: str, bold: bool) -> str:
    return f"**{text}**" if bold else text


def _evidence(p: Pitfall) -> str:
    refs = ", ".join(p.evidence)
    if not refs:
        return "—"
    return f"related: {refs}" if p.kind == "test-only" else refs


def compare(report: dict[str, Any]) -> str:
    """The report as GitHub-flavoured Markdown: implementations in columns."""
    meta, cells = report["meta"], report["cells"]
    specs = [info["spec"] for info in report["impls"]]
    out = [
        "# Implementation comparison",
        "",
        f"Profile `{meta['profile']}`, devices {', '.join(meta['devices'])}, {meta['date']}; "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + ".",
        "",
        f"Reproduce: `{meta['command']}`",
        "",
        COMPARE_INTRO.replace("*headroom*", "**headroom**"),
        "",
    ]
    if report.get("interrupted"):
        out += [f"**Interrupted** ({signal.Signals(report['interrupted']).name}): partial results.", ""]
    out += ["## Implementations and their declared conventions", ""]
    for info in report["impls"]:
        out.append(
            f"- **{info['spec']}** (`{info['module']}`)" + (f": {info['skip_reason']}" if info["skip_reason"] else "")
        )
        out += [f"  - {c}: {_escape(conventions_line(info, c))}" for c in info["provided"]]
    out.append("")
    lines = highlights(cells)
    if lines:
        out += ["## Where the implementations differ", "", *[f"- {_escape(line)}" for line in lines], ""]
    head = "| " + " | ".join(["", *specs]) + " |"
    rule = "|" + "---|" * (len(specs) + 1)
    for component in components(cells):
        out += [f"## {component}", "", head.replace("|  |", "| dtype |", 1), rule]
        for dtype, device, row in overview_rows(report, component):
            where = dtype + (f" {device}" if len(meta["devices"]) > 1 else "")
            out.append("| " + " | ".join([where, *("<br>".join(overview_lines(c)) for c in row)]) + " |")
        out += ["", "| law | dtype | " + " | ".join(specs) + " |", "|" + "---|" * (len(specs) + 2)]
        previous = None
        for law_id, dtype, device, verdicts in matrix(report, component):
            name = law_id.split(".", 1)[1] if law_id != previous else ""
            previous = law_id
            where = dtype + (f" {device}" if len(meta["devices"]) > 1 else "")
            texts = [f"**{v.text}**" if v.css in ("f", "er") else v.text for v in verdicts]
            out.append("| " + " | ".join([name, where, *texts]) + " |")
        out.append("")
    out += ["## Failures and expected failures", ""]
    if not problems(report):
        out += ["None: every law that ran passed.", ""]
    for cell, (law_id, status, message) in problems(report):
        out += [
            f"- **{cell.impl}** `{law_id}` {cell.dtype} {cell.device}: **{status}**",
            "",
            "  ```",
            *[f"  {line}" for line in message.strip().splitlines()[:12]],
            "  ```",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def league(report: dict[str, Any], command: str) -> str:
    """The accuracy league as Markdown: every implementation on one page, ranked, with its findings."""
    meta = report["meta"]
    out = [
        "# Accuracy league",
        "",
        "Every shipped adapter and the reference, judged by the same laws on the same inputs "
        f"(profile `{meta['profile']}`, derandomized; devices {', '.join(meta['devices'])}; {meta['date']}; "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + ").",
        "",
        f"Regenerate: `{command}`",
        "",
        "Ranked by unexpected failures, then the share of expected failures among the law runs (a law its declared "
        "conventions cannot be judged by, or an entry of its shipped expectation file; implementations provide "
        "different components), then "
        "accuracy: the worst **headroom** of the laws against golden (`*_matches_golden`, "
        "`*_matches_stored_golden`, `*_gradients_match_golden`) — max |error| ÷ derived bound over every example, "
        "≤ 1 passes; 0.5 means the largest error used half of what the error analysis allows. Headroom above 1 "
        "in an *expected* failure is the size of a documented departure (e.g. fp32 arithmetic on fp64 inputs).",
        "",
        "| # | implementation | components | laws passed | failed | expected failures | "
        + " | ".join(f"headroom {d}" for d in DTYPES)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(DTYPES),
    ]
    rank = 0
    for row in league_rows(report):
        if not row["ran"]:
            cells = ["—", f"**{row['spec']}**", ", ".join(row["provided"]) or "—", "skipped here", "—", "—"]
            out.append("| " + " | ".join(cells + ["—"] * len(DTYPES)) + " |")
            continue
        rank += 1
        rooms = [headroom_text(h, failed=h > 1) if h is not None else "—" for h in row["worst"].values()]
        bad = row["failed"] + row["error"]
        cells = [
            str(rank),
            f"**{row['spec']}**",
            ", ".join(row["provided"]),
            f"{row['passed'] + row['xpassed']}/{row['ran']}",
            f"**{bad}**" if bad else "0",
            str(row["xfailed"]),
        ]
        out.append("| " + " | ".join(cells + rooms) + " |")
    out += ["", "## Findings", ""]
    for info in report["impls"]:
        said, reasons = findings(info["spec"])
        declared = info.get("declared") or {}
        out.append(f"### {info['spec']}")
        out.append("")
        if info["skip_reason"]:
            out.append(f"- Not run here: {_escape(info['skip_reason'])}")
        for component, summary in declared.items():
            out.append(f"- Declares ({component}): {_escape(summary)}")
        out += [f"- Finding: {_escape(text)}" for text in said]
        out += [f"- Expected failure: {_escape(text)}" for text in reasons]
        records = report["results"].get(info["spec"], [])
        excused = declared_xfails(records)  # xfailed by a declaration (the runner's message says so)
        out += [f"- Expected failure: {_escape(text)} ({n} law run{'s' * (n > 1)})" for text, n in excused.items()]
        failed = unexpected(records)
        if failed:
            out.append("- **Unexpected failures**: " + "; ".join(f"{k} {', '.join(v)}" for k, v in failed.items()))
        if not (said or reasons or excused or failed or info["skip_reason"]):
            out.append("- None: every law passes." if records else "- Nothing ran.")
        out.append("")
    if report.get("unavailable"):
        out += ["## Not available on this machine", ""]
        out += [f"- **{spec}**: {_escape(reason.splitlines()[0])}" for spec, reason in report["unavailable"].items()]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def gallery(km: KillMatrix) -> str:
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
        d = km.demos.get(name)  # None: not run here (written in a package not installed: ``Pitfall.missing``)
        if d is None:
            needed = f"not run here: {p.missing or 'not in this run'}"
        elif d.caught:
            needed = examples_needed(d.result)
        else:
            needed = f"pending ({d.outcome}): {p.pending}" if p.pending else f"NOT CAUGHT: {d.outcome}"
        ref_status = d.reference.status if d is not None and d.reference is not None else "not run"
        lines.append(
            f"| {i} | `{name}` | {p.kind} | {_escape(p.title)} | `{p.law}` | {p.dtype} | {_escape(needed)} | "
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
            f"`{n}`" + ("" if n not in km.demos or km.demos[n].caught else " (pending)")
            for n, p in PITFALLS.items()
            if p.law == law_id
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
    for component in records.names():
        law_ids = [law_id for law_id, law in LAWS.items() if law.component == component]
        if not law_ids:
            continue
        names = [n for n, p in PITFALLS.items() if p.component == component and n in km.rows]
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
            cells = [_bold(kill_cell(km.rows[name][law_id]), law_id == PITFALLS[name].law) for law_id in law_ids]
            lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
        lines.append("| *nanolm_core* | " + " | ".join(kill_cell(km.reference[law_id]) for law_id in law_ids) + " |")
    caught = [n for n, d in km.demos.items() if d.caught]
    pending = [n for n, p in PITFALLS.items() if p.pending and n not in caught]
    absent = [n for n in PITFALLS if n not in km.demos]
    lines += [
        "",
        f"{len(caught)} of {len(PITFALLS)} entries are caught by their designated law in the `{km.profile}` profile"
        + (f"; pending (known gaps, see the catalogue): {', '.join(pending)}" if pending else "")
        + (f"; not run here (see the catalogue): {', '.join(absent)}" if absent else "")
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
