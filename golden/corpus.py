"""The stored golden corpus: reading, writing, checksums and verification of ``golden/data/``.

Format (see ``golden/data/README.md``): one JSON document per case family (``rmsnorm.json``,
``swiglu.json``, ``block.json``) plus ``MANIFEST.json`` holding the sha256 and size of every family file.
No pickle, no binary blobs: exact floats are hexadecimal strings (``float.hex`` of the float64 value, exact
for every dtype), golden values are decimal strings with 34 significant digits (≥ 112 bits). Large inputs
(the Llama-7B-shaped SwiGLU row) are stored as a *recipe* — a PCG64 seed turned into values by integer
arithmetic and correct rounding (:func:`recipe_values`), stable across numpy/torch versions — together with
the sha256 of the values it must produce. Every file starts with a magic string and a format version, so a
stale or foreign file is refused with a hint.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import torch

from golden.engine import Golden
from golden.rounding import round_to_grid

MAGIC = "nanolm-verify golden corpus"
FORMAT_VERSION = 1
DATA_DIR = Path(__file__).parent / "data"
MANIFEST = "MANIFEST.json"
FAMILIES = ("rmsnorm", "swiglu", "block")
DIGITS = 34  # significant decimal digits of a golden value: 34·log2(10) ≈ 113 bits

DTYPE_NAMES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
REGEN_HINT = "regenerate it with `nanolm-verify golden regen --force` (or restore it from git)"


class CorpusError(RuntimeError):
    """A corpus file is missing, stale, truncated or tampered with (the message names the file)."""


# ----------------------------------------------------------------------------------------- encoding
def encode_hex(a: np.ndarray) -> list[str]:
    return [float(v).hex() for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def decode_hex(values: list[str], shape: list[int]) -> np.ndarray:
    return np.array([float.fromhex(v) for v in values], dtype=np.float64).reshape(shape)


def encode_decimal(hi: np.ndarray, lo: np.ndarray) -> list[str]:
    """hi + lo exactly (Decimal of a float is exact), printed with DIGITS significant digits."""
    out = []
    with localcontext() as ctx:
        ctx.prec = 80
        for h, lv in zip(np.asarray(hi).reshape(-1).tolist(), np.asarray(lo).reshape(-1).tolist(), strict=True):
            if not math.isfinite(h):
                out.append(repr(h))
                continue
            out.append(format(Decimal(h) + Decimal(lv), f".{DIGITS - 1}e"))
    return out


def decode_decimal(values: list[str], shape: list[int]) -> Golden:
    """Decimal strings → Golden(hi, lo): hi = the correctly rounded float64, lo = the rounded remainder."""
    hi = np.empty(len(values))
    lo = np.empty(len(values))
    for i, s in enumerate(values):
        if s in ("nan", "inf", "-inf"):
            hi[i], lo[i] = float(s), 0.0
            continue
        f = Fraction(Decimal(s))
        h = float(f)
        hi[i], lo[i] = h, float(f - Fraction(h))
    return Golden(hi.reshape(shape), lo.reshape(shape), "corpus", {"method": "corpus"})


def recipe_values(seed: int, shape: list[int], dtype: str, scale: float) -> np.ndarray:
    """Deterministic inputs from a seed: PCG64 raw 64-bit words w → v = (w >> 11)·2^-53 ∈ [0, 1),
    x = scale·√3·(2v − 1) (uniform, variance scale²), rounded to nearest-even in ``dtype``. Only the PCG64
    *bit stream* is used (stable across numpy versions by numpy's policy) and our own exact rounding."""
    n = int(np.prod(shape))
    raw = np.random.Generator(np.random.PCG64(seed)).bit_generator.random_raw(n)
    v = (raw >> np.uint64(11)).astype(np.float64) * 2.0**-53
    x = (2.0 * v - 1.0) * (scale * math.sqrt(3.0))
    return round_to_grid(x, None, DTYPE_NAMES[dtype]).reshape(shape)


def sha256_arrays(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, Any] | None = None) -> str:
    """sha256 over the float64 little-endian bytes of each array (sorted by name) and the JSON of the scalars."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(np.asarray(arrays[name], dtype="<f8"))
        h.update(name.encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    if scalars:
        h.update(json.dumps(scalars, sort_keys=True).encode())
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------------ reading
@dataclasses.dataclass
class Case:
    """One stored case: inputs (exact float64 arrays + their dtype), scalar parameters, the golden value.

    Inputs stored as a recipe are generated (and checked against their sha256) on first access.
    """

    family: str
    id: str
    description: str
    dtype: torch.dtype
    _inputs: dict[str, np.ndarray] | None
    params: dict[str, Any]
    golden: Golden
    record: dict[str, Any]
    file: Path

    @property
    def inputs(self) -> dict[str, np.ndarray]:
        if self._inputs is None:
            self._inputs = _decode_inputs(self.record, self.file)
        return self._inputs

    @property
    def lazy(self) -> bool:
        """True for cases with recipe inputs (large: regenerated on access)."""
        return any("recipe" in spec for spec in self.record["inputs"].values())

    def tensor(self, name: str) -> torch.Tensor:
        """An input as a CPU tensor of the case's dtype (exact: the values are representable)."""
        return torch.from_numpy(self.inputs[name].copy()).to(self.dtype)

    @property
    def cost(self) -> int:
        """Number of input values (a proxy for the recomputation cost; picks the cheap sample to recompute)."""
        return sum(int(np.prod(spec["shape"])) for spec in self.record["inputs"].values())


def _load_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise CorpusError(f"{path}: missing; {REGEN_HINT}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: not valid JSON (truncated or corrupted: {exc}); {REGEN_HINT}") from None
    if not isinstance(doc, dict) or doc.get("magic") != MAGIC:
        raise CorpusError(f"{path}: not a nanolm-verify golden corpus file (bad magic); {REGEN_HINT}")
    if doc.get("format_version") != FORMAT_VERSION:
        raise CorpusError(
            f"{path}: format version {doc.get('format_version')!r}, this nanolm-verify reads "
            f"version {FORMAT_VERSION} — the file is stale; {REGEN_HINT}"
        )
    return doc


def check_manifest(data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """Verify MANIFEST.json and the sha256/size of every family file in it (CorpusError names the bad file)."""
    man = _load_json(data_dir / MANIFEST)
    for name, meta in man["files"].items():
        path = data_dir / name
        if not path.exists():
            raise CorpusError(f"{path}: listed in {MANIFEST} but missing; {REGEN_HINT}")
        size = path.stat().st_size
        if size != meta["bytes"]:
            raise CorpusError(
                f"{path}: {size} bytes, {MANIFEST} records {meta['bytes']} (truncated or modified); {REGEN_HINT}"
            )
        digest = file_sha256(path)
        if digest != meta["sha256"]:
            raise CorpusError(
                f"{path}: sha256 {digest[:16]}… does not match {MANIFEST} ({meta['sha256'][:16]}…): "
                f"the file was modified; {REGEN_HINT}"
            )
    return man


def _decode_inputs(rec: dict[str, Any], path: Path) -> dict[str, np.ndarray]:
    dtype = DTYPE_NAMES[rec["dtype"]]
    inputs = {}
    for name, spec in rec["inputs"].items():
        if "hex" in spec:
            if len(spec["hex"]) != int(np.prod(spec["shape"])):
                raise CorpusError(
                    f"{path}: case {rec['id']!r}: input {name} has {len(spec['hex'])} values for shape "
                    f"{spec['shape']}; {REGEN_HINT}"
                )
            inputs[name] = decode_hex(spec["hex"], spec["shape"])
        else:
            r = spec["recipe"]
            inputs[name] = recipe_values(r["seed"], spec["shape"], r["dtype"], r["scale"])
    if sha256_arrays(inputs, rec.get("params", {})) != rec["inputs_sha256"]:
        raise CorpusError(
            f"{path}: case {rec['id']!r}: inputs do not hash to the recorded sha256 (modified data or a "
            f"changed recipe generator); {REGEN_HINT}"
        )
    for name, a in inputs.items():
        if not np.array_equal(round_to_grid(a, None, dtype), a, equal_nan=True):
            raise CorpusError(f"{path}: case {rec['id']!r}: input {name} is not representable in {rec['dtype']}")
    return inputs


def _case_from_record(family: str, rec: dict[str, Any], path: Path) -> Case:
    try:
        dtype = DTYPE_NAMES[rec["dtype"]]
        params = {
            k: (float.fromhex(v) if isinstance(v, str) and v.startswith(("0x", "-0x")) else v)
            for k, v in rec.get("params", {}).items()
        }
        g = decode_decimal(rec["golden"]["decimal"], rec["golden"]["shape"])
    except (KeyError, ValueError, TypeError, ArithmeticError) as exc:
        raise CorpusError(f"{path}: case {rec.get('id')!r} is malformed ({exc!r}); {REGEN_HINT}") from None
    if sha256_arrays({"hi": g.hi, "lo": g.lo}) != rec["golden_sha256"]:
        raise CorpusError(f"{path}: case {rec['id']!r}: golden values do not hash to the recorded sha256; {REGEN_HINT}")
    case = Case(family, rec["id"], rec.get("description", ""), dtype, None, params, g, rec, path)
    if not case.lazy:
        case._inputs = _decode_inputs(rec, path)
    return case


def load_family(family: str, data_dir: Path = DATA_DIR, manifest: bool = True) -> tuple[dict[str, Any], list[Case]]:
    """(header, cases) of one family, after the manifest checksum (CorpusError on any inconsistency)."""
    if manifest:
        check_manifest(data_dir)
    path = data_dir / f"{family}.json"
    doc = _load_json(path)
    if doc.get("family") != family:
        raise CorpusError(f"{path}: holds family {doc.get('family')!r}, expected {family!r}")
    cases = [_case_from_record(family, rec, path) for rec in doc["cases"]]
    if len(cases) != doc.get("n_cases"):
        raise CorpusError(f"{path}: {len(cases)} cases, header says {doc.get('n_cases')} (truncated?); {REGEN_HINT}")
    header = {k: v for k, v in doc.items() if k != "cases"}
    return header, cases


def cases(family: str, data_dir: Path = DATA_DIR) -> list[Case]:
    """The stored cases of a family ('rmsnorm', 'swiglu', 'block'), verified."""
    return load_family(family, data_dir)[1]


def iter_all(data_dir: Path = DATA_DIR) -> Iterator[Case]:
    check_manifest(data_dir)
    for fam in FAMILIES:
        yield from load_family(fam, data_dir, manifest=False)[1]


# ---------------------------------------------------------------------------------------- recompute
def recompute(case: Case, **opts: Any) -> Golden:
    """The engine's golden value for a stored case (for ``golden verify``)."""
    import golden as G
    from nanolm_core import ModelConfig

    t = case.tensor
    if case.family == "rmsnorm":
        return G.rmsnorm(t("x"), t("weight"), case.params["eps"], **opts)
    if case.family == "swiglu":
        return G.swiglu(t("x"), t("w_gate"), t("w_up"), t("w_down"), **opts)
    if case.family == "block":
        cfg = ModelConfig(**case.params["config"])
        return G.block(t("x"), {k: t(k) for k in G.BLOCK_PARAMS}, cfg, **opts)
    raise CorpusError(f"{case.file}: unknown family {case.family!r}")


def compare(case: Case, fresh: Golden) -> float:
    """max |stored − fresh| / max(|fresh|, 2^-40·max|fresh|, 2^-1000) over the case: relative per element, with
    near-zero outputs (cancellation) measured against the case's scale instead."""
    a = case.golden
    with np.errstate(all="ignore"):
        diff = np.abs((a.hi - fresh.hi) + (a.lo - fresh.lo))
        finite = np.abs(fresh.hi[np.isfinite(fresh.hi)])
        floor = max(2.0**-40 * float(finite.max()) if finite.size else 0.0, 2.0**-1000)
        rel = diff / np.maximum(np.abs(fresh.hi), floor)
    both_nan = np.isnan(a.hi) & np.isnan(fresh.hi)
    rel = np.where(both_nan, 0.0, rel)
    return float(np.max(rel)) if rel.size else 0.0


# ------------------------------------------------------------------------------------------ writing
def write_family(path: Path, family: str, header: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """The header pretty-printed, then one compact line per case (small files, readable diffs)."""
    head = {"magic": MAGIC, "format_version": FORMAT_VERSION, "family": family, **header, "n_cases": len(records)}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]  # drop the closing "\n}"
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]
    text += ',\n "cases": [\n' + ",\n".join(lines) + "\n ]\n}\n"
    path.write_text(text, encoding="utf-8")


def write_manifest(data_dir: Path, generator_version: str) -> None:
    files = {}
    for fam in FAMILIES:
        p = data_dir / f"{fam}.json"
        if p.exists():
            files[p.name] = {"sha256": file_sha256(p), "bytes": p.stat().st_size}
    doc = {"magic": MAGIC, "format_version": FORMAT_VERSION, "generator_version": generator_version, "files": files}
    (data_dir / MANIFEST).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
