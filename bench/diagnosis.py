"""How often the diagnosis of a failure names its cause (issue 37: right ≥ 90 %, wrong 0), over the wrappers a user
writes for third-party norms and decoders (``tests/wrappers``) and a genuine bug.

    python bench/diagnosis.py                       # every wrapper, ci profile
    python bench/diagnosis.py --profile dev --only hf_llama_norm,keras_centring

Each wrapper is checked (``nanolm-verify check WRAPPER --json``); every failed result of cause "law" is one sample.
Its diagnosis is *right* when it names what the wrapper does (``EXPECTED``: the declaration keys that describe it,
"centring" for a centred statistic, or "no known convention matches" for the genuine bug), *wrong* when it names
something else, *unnamed* when it names nothing (no diagnosis line, or "no known convention matches" for a
wrapper that follows a convention). Prints each sample's line and the shares; exit 1 when right < 90 % or wrong > 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path

NO_MATCH = "no known convention matches"
CENTRING = "a centred statistic"  # the diagnosis names centring (a bug: keras' rms_scaling)
FP32_IN_FP64 = 'compute_dtype: {"fp64": "fp32"}'  # the declaration an fp32-computing library needs in fp64
# wrapper → what a right diagnosis says (any one of these phrases)
EXPECTED: dict[str, tuple[str, ...]] = {
    "tests.wrappers.hf_llama_norm": (FP32_IN_FP64,),
    "tests.wrappers.hf_qwen2_norm": (FP32_IN_FP64,),
    "tests.wrappers.hf_olmo2_norm": (FP32_IN_FP64,),
    "tests.wrappers.hf_t5_norm": (FP32_IN_FP64,),
    "tests.wrappers.hf_gemma_norm": (FP32_IN_FP64, "weight_offset: 1.0"),
    "tests.wrappers.torchtune_style": (FP32_IN_FP64,),
    "tests.wrappers.hf_decoder": (FP32_IN_FP64,),
    "tests.wrappers.add_norm_hf": (FP32_IN_FP64,),
    "tests.wrappers.keras_centring": (CENTRING,),
    "tests.wrappers.t5": (),  # correct: no failure expected
    "tests.wrappers.flax_style": (),
    "properties.gallery.eps_outside_sqrt": (NO_MATCH,),
}


def classify(diagnosis: str | None, expected: tuple[str, ...]) -> str:
    """right | wrong | unnamed for one failure's diagnosis."""
    if not diagnosis:
        return "unnamed"
    if NO_MATCH in expected:
        return "right" if diagnosis.startswith(NO_MATCH) else "wrong"
    if diagnosis.startswith(NO_MATCH):
        return "unnamed"
    return "right" if any(e in diagnosis for e in expected) else "wrong"


def run(wrapper: str, profile: str, workers: int, tmp: Path) -> list[dict]:
    out = tmp / f"{wrapper}.json"
    cmd = [sys.executable, "-m", "properties.entry.cli", "check", wrapper, "--profile", profile,
           "--workers", str(workers), "--json", str(out)]  # fmt: skip
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if not out.exists():
        raise SystemExit(f"{wrapper}: no report (run `nanolm-verify check {wrapper}` to see why)")
    return json.loads(out.read_text())["results"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated wrapper names (the module's last part)")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    counts: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for wrapper, expected in EXPECTED.items():
            if only and wrapper.rsplit(".", 1)[-1] not in only:
                continue
            for r in run(wrapper, args.profile, args.workers, Path(tmp)):
                if r["status"] != "failed" or r.get("cause") != "law":
                    continue
                verdict = classify(r.get("diagnosis"), expected or ("(no failure expected)",))
                counts[verdict] += 1
                print(f"{verdict:8} {wrapper.rsplit('.', 1)[-1]:18} {r['law_id']:52} {r['dtype']:5} "
                      f"{r.get('tier') or '-':13} {(r.get('diagnosis') or '-')[:110]}")  # fmt: skip
    total = sum(counts.values())
    if not total:
        print("no failures")
        return 0
    share = {k: counts[k] / total for k in ("right", "wrong", "unnamed")}
    print(f"\n{total} failures: right {counts['right']} ({share['right']:.0%}), wrong {counts['wrong']} "
          f"({share['wrong']:.0%}), unnamed {counts['unnamed']} ({share['unnamed']:.0%})")  # fmt: skip
    return 0 if share["right"] >= 0.9 and counts["wrong"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
