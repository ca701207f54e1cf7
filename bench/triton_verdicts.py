"""Interpreted against compiled: the verdicts of one Triton adapter's two reports, law × dtype by law × dtype.

    python bench/triton_verdicts.py OUT/liger-interpreted.json OUT/liger.json   # markdown on stdout

bench/device_check.sh runs each Triton adapter twice on a lent GPU — interpreted on the CPU (``--triton interpret
--device cpu``) and compiled on CUDA — and appends this table to its summary. A verdict that differs is a finding
about the interpreter's fidelity (docs/adapters.md, "Triton kernels, interpreted"): what the interpreter cannot
show (races, the GPU's libdevice roundings, FMA contraction, atomics' order) or a kernel path only one of them takes
(the autotuner's first config interpreted, its fastest compiled; CUDA-only launch limits). A law run that judged
fewer sizes interpreted (the profile's time per case left its largest code-path sizes: measurement ``sizes left``)
is listed apart: its verdict speaks for the sizes it judged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["compare", "markdown", "verdicts"]


def verdicts(report: dict[str, Any], device: str) -> dict[tuple[str, str], str]:
    """(law id, dtype) → status ("passed", "failed (law)", "skipped", …) of the report's results on ``device``."""
    out = {}
    for r in report["results"]:
        if r["device"] == device:
            out[(r["law_id"], r["dtype"])] = r["status"] + (f" ({r['cause']})" if r.get("cause") else "")
    return out


def compare(interpreted: dict[str, Any], compiled: dict[str, Any], device: str = "cuda") -> dict[str, Any]:
    """The interpreted run's CPU verdicts against the compiled run's ``device`` verdicts: ``agree`` (count), the
    ``differ`` rows (law, dtype, interpreted, compiled) and the law runs only one report has."""
    a, b = verdicts(interpreted, "cpu"), verdicts(compiled, device)
    both = sorted(a.keys() & b.keys())
    differ = [(law, dt, a[law, dt], b[law, dt]) for law, dt in both if a[law, dt] != b[law, dt]]
    return {
        "agree": len(both) - len(differ),
        "differ": differ,
        "only_interpreted": sorted(a.keys() - b.keys()),
        "only_compiled": sorted(b.keys() - a.keys()),
        "sizes_left": [
            (r["law_id"], r["dtype"], [x["case"] for x in r["measurements"]["sizes left"]])
            for r in interpreted["results"]
            if r["device"] == "cpu" and (r.get("measurements") or {}).get("sizes left")
        ],
        "kernels": (interpreted["implementation"].get("kernels", ""), compiled["implementation"].get("kernels", "")),
    }


def markdown(name: str, c: dict[str, Any]) -> str:
    lines = [f"### {name}: interpreted (CPU) vs compiled (CUDA)", "",
             f"{c['agree']} law runs agree, {len(c['differ'])} differ; {len(c['only_interpreted'])} run interpreted "
             f"only, {len(c['only_compiled'])} compiled only.", ""]  # fmt: skip
    if c["differ"]:
        lines += ["| law | dtype | interpreted | compiled |", "|---|---|---|---|"]
        lines += [f"| {law} | {dt} | {x} | {y} |" for law, dt, x, y in c["differ"]]
    if c.get("sizes_left"):
        lines += ["", f"{len(c['sizes_left'])} law runs judged fewer sizes interpreted (the profile's time per case):",
                  "", "| law | dtype | sizes left interpreted |", "|---|---|---|"]  # fmt: skip
        lines += [f"| {law} | {dt} | {'; '.join(sizes)} |" for law, dt, sizes in c["sizes_left"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    interpreted, compiled = (json.loads(Path(p).read_text()) for p in argv[:2])
    name = interpreted["implementation"]["spec"]
    print(markdown(name, compare(interpreted, compiled)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
