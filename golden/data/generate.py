"""Generator of the stored golden corpus (run through ``nanolm-verify golden regen``; see README.md here).

Every case is a deterministic function of the recipe, :mod:`golden.recipes` (the cases: ids, dtypes, shapes,
seeds; the corpus loader checks every stored case against it) and this file: inputs come from seeded PCG64 bit
streams turned into values by exact arithmetic and correct rounding to the case dtype, then stored exactly (hex)
— except large inputs (the model-sized RMSNorm rows, the SwiGLU weights of model shapes, the long Block
sequences), stored as their recipe (:func:`golden.recipes.recipe_values`) + sha256. Golden values come from
``golden`` with ``validate="full"`` (every output recomputed by plain mpmath at 192 bits) for every case with
fewer than 60 000 input values, and ``validate="sample"`` (certified sums + mpmath checks of the DD kernels)
otherwise.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import torch

from golden import corpus, engine
from golden.formats import fmt
from golden.recipes import GENERATORS, Recipe

__all__ = ["EPS", "FULL_VALIDATION", "GENERATORS", "GENERATOR_VERSION", "Recipe", "append", "generate", "header"]

GENERATOR_VERSION = "2.1.0"  # 2.1.0: the sensitive Block cases (appended: the 2.0.0 cases are unchanged)
EPS = 1e-6
FULL_VALIDATION = 60_000  # cases with fewer input values are recomputed in full by plain mpmath


# ------------------------------------------------------------------------------------------ writing
def _record(family: str, spec: dict[str, Any]) -> dict[str, Any]:
    dt = spec["dtype"]
    inputs: dict[str, np.ndarray] = {}
    stored: dict[str, Any] = {}
    for name in corpus.INPUTS[family]:
        v = spec[name]
        if isinstance(v, Recipe):
            inputs[name], stored[name] = v.values(dt), v.spec(dt)
        else:
            inputs[name] = np.asarray(v, dtype=np.float64)
            stored[name] = {"shape": list(inputs[name].shape), "hex": corpus.encode_hex(inputs[name])}
    params: dict[str, Any] = {}
    if family in ("rmsnorm", "add_rmsnorm"):
        params["eps"] = float(EPS).hex()
    if family == "block":
        params["config"] = spec["config"]
    tensors = {n: torch.from_numpy(a).to(fmt(dt).dtype) for n, a in inputs.items()}
    full = sum(a.size for a in inputs.values()) < FULL_VALIDATION
    opts = {"validate": "full" if full else "sample", "timeout": 3600.0}
    g = corpus.golden_of(family, tensors, {**params, "eps": EPS}, **opts)
    decimal = corpus.encode_decimal(g.hi, g.lo)
    stored_g = corpus.decode_decimal(decimal, list(g.hi.shape))
    return {
        "id": spec["id"],
        "description": spec["description"],
        "dtype": dt,
        "params": params,
        "inputs": stored,
        "inputs_sha256": corpus.sha256_arrays(inputs, params),
        "golden": {"shape": list(g.hi.shape), "decimal": decimal},
        "golden_sha256": corpus.sha256_arrays({"hi": stored_g.hi, "lo": stored_g.lo}),  # of the values as read back
        "validation": {
            k: g.info[k]
            for k in ("method", "validated", "sum_bound_rel", "kernel_checks", "full_check_rel")
            if k in g.info
        },
    }


def header() -> dict[str, Any]:
    return {
        "generator": "golden/data/generate.py",
        "generator_version": GENERATOR_VERSION,
        "provenance": {
            "mpmath": mpmath.__version__,
            "numpy": np.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
            "engine_prec_bits": engine.DEFAULT_PREC,
            "validation_prec_bits": engine.DEFAULT_PREC + 64,
            "tol_bits": engine.DEFAULT_TOL_BITS,
            "decimal_digits": corpus.DIGITS,
        },
    }


def append(data_dir: Path, family: str, log: Any = print) -> list[str]:
    """Compute the cases of ``family`` that this generator defines and the stored file lacks, and add them: every
    stored case is kept verbatim (a stored golden value is never recomputed or overwritten), the file is verified
    first and rewritten aside then moved, the manifest updated. Returns the new ids."""
    header, stored = corpus.load_family(family, data_dir, pinned=False)  # verified: checksums, every case's form
    have = {c.id for c in stored}
    records = [c.record for c in stored]
    new = [spec for spec in GENERATORS[family]() if spec["id"] not in have]
    for spec in new:
        records.append(_record(family, spec))
        log(f"  {family}/{spec['id']}: {records[-1]['validation']}")
    if new:
        head = {k: v for k, v in header.items() if k not in ("magic", "format_version", "family", "n_cases")}
        head.update(generator_version=GENERATOR_VERSION)
        aside = data_dir / f".{family}.json.new"
        corpus.write_family(aside, family, head, records)
        aside.replace(data_dir / f"{family}.json")
        corpus.write_manifest(data_dir, GENERATOR_VERSION)
    return [spec["id"] for spec in new]


def generate(data_dir: Path, families: tuple[str, ...] = corpus.FAMILIES, log: Any = print) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    for fam in families:
        records = []
        for spec in GENERATORS[fam]():
            records.append(_record(fam, spec))
            log(f"  {fam}/{spec['id']}: {records[-1]['validation']}")
        corpus.write_family(data_dir / f"{fam}.json", fam, header(), records)
    corpus.write_manifest(data_dir, GENERATOR_VERSION)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="the stored golden corpus: regenerate (golden regen) or append")
    parser.add_argument("--append", choices=corpus.FAMILIES, help="add the family's missing cases, keep the rest")
    args = parser.parse_args()
    if args.append:
        print("appended:", ", ".join(append(corpus.DATA_DIR, args.append)) or "nothing (every case is stored)")
    else:
        generate(corpus.DATA_DIR)
