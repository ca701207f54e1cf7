"""The stored golden corpus: reading, writing, checksums and verification of ``golden/data/``.

Format (see ``golden/data/README.md``): one JSON document per case family (``rmsnorm.json``,
``swiglu.json``, ``block.json``) plus ``MANIFEST.json`` holding the sha256 and size of every family file.
No pickle, no binary blobs: exact floats are hexadecimal strings (``float.hex`` of the float64 value, exact
for every dtype), golden values are decimal strings with 34 significant digits (≥ 112 bits). Large inputs
are stored as a *recipe* — a PCG64 seed turned into values by integer arithmetic and correct rounding
(:func:`recipe_values`), stable across numpy/torch versions — together with the sha256 of the values it must
produce. Every file starts with a magic string and a format version, so a stale or foreign file is refused
with a hint.

The laws' entry point is :func:`cases`::

    for case in golden.corpus.cases("rmsnorm"):  # manifest and file checksums verified first
        x, w = case.tensor("x"), case.tensor("weight")  # exact CPU tensors in case.dtype
        want = case.golden.rounded(case.dtype)  # a golden.Golden
        ...  # case.params["eps"], case.id, case.description

Anything wrong with the corpus — a manifest that is missing, unparsable, ill-typed, omits a family or lists no
files; a family file that is missing, truncated, modified, stale or malformed — raises :class:`CorpusError`
with a one-line message naming the file and the fix.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from decimal import Context, Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import torch

from golden import dd, engine, recipes
from golden.formats import FORMATS, fmt
from golden.framework import Golden
from golden.layout import DATA_DIR, FAMILIES, MANIFEST
from golden.recipes import recipe_values  # (the recipe's, re-exported: the corpus format's input values)
from golden.rounding import round_to_grid
from nanolm_core import ModelConfig

MAGIC = "nanolm-verify golden corpus"
FORMAT_VERSION = 1
INPUTS = {  # the stored inputs of each family, by name
    "rmsnorm": ("x", "weight"),
    "swiglu": ("x", "w_gate", "w_up", "w_down"),
    "block": ("x", *engine.BLOCK_PARAMS),
    "add_rmsnorm": ("x", "residual", "weight"),  # golden: y (h = x + r needs none: it is one rounding)
}
_EPS_FAMILIES = ("rmsnorm", "add_rmsnorm")  # families whose params hold eps
DTYPES = tuple(f.long_name for f in FORMATS)  # dtype names in the files: float64, float32, float16, bfloat16
DIGITS = 34  # significant decimal digits of a golden value: 34·log2(10) ≈ 113 bits
REGEN_HINT = "regenerate it with `nanolm-verify golden regen --force` (or restore it from git)"
# The corpus this version judges by: the sha256 of its MANIFEST.json, which holds the sha256 of every family file.
# A corpus beside the code vouches only for itself (a re-hashed change passes its own manifest); pinned here, a
# change of the corpus is a reviewed change of this line too. `golden regen` prints the value to put here.
MANIFEST_SHA256 = "0c891a54b7bca2e5ef6178a868d3c843442e8b8d9e35491678fda8d3f36fd3cd"
_SHA256 = re.compile(r"[0-9a-f]{64}")


class CorpusError(RuntimeError):
    """A corpus file is missing, stale, truncated, malformed or tampered with (one line naming the file and the fix)."""


# ----------------------------------------------------------------------------------------- encoding
def encode_hex(a: np.ndarray) -> list[str]:
    return [float(v).hex() for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def decode_hex(values: list[str], shape: list[int]) -> np.ndarray:
    return np.fromiter(map(float.fromhex, values), np.float64, len(values)).reshape(shape)


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


_EXACT = Context(prec=2000)  # enough digits for v − hi of any decimal of DIGITS digits: exact


def _decode_exact(s: str) -> tuple[float, float]:
    """(RN(v), RN(v − RN(v))) of the decimal string s = v, exactly (Decimal subtraction is exact here)."""
    if not isinstance(s, str):
        raise TypeError(f"a golden value must be a decimal string, got {s!r}")
    h = float(s)
    return h, float(_EXACT.subtract(Decimal(s), Decimal(h))) if math.isfinite(h) else 0.0


@functools.lru_cache(maxsize=1024)
def _pow10(k: int) -> tuple[float, float, float]:
    """10^k as a triple-double p1 + p2 + p3, each part correctly rounded (relative error ≤ 2^-155)."""
    f = Fraction(10) ** k
    p1 = float(f)
    p2 = float(f - Fraction(p1))
    return p1, p2, float(f - Fraction(p1) - Fraction(p2))


def _certain(r: dd.DD, err: np.ndarray) -> np.ndarray:
    """Where an exact value within err of r.hi + r.lo surely rounds to r.hi (strictly inside its half-gaps;
    the gap below r.hi is the smaller one where r.hi is a power of two)."""
    mag = np.abs(r.hi)
    gap = mag - np.nextafter(mag, 0.0)
    return (mag > 0) & np.isfinite(err) & (np.abs(r.lo) + err < gap / 2)


def _decode_fast(values: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hi, lo, ok): RN(v) and RN(v − RN(v)) of decimal strings v of the stored form ``d.ddd…de±X`` (DIGITS
    digits), vectorised and certified where ``ok``.

    v = N·10^k with the integer N = A·10^22 + B·10^11 + C (A, B, C < 2^40; a1 + a2 = A·10^22 and b1 + b2 =
    B·10^11 exactly by TwoProd). hi: N in double-double times 10^k (double-double), ≤ 2^-100 relative. lo: with
    M = hi·10^-k (10^-k a triple-double), v − hi = (N − M)·10^k where a1 − m1 is exact (Sterbenz) and the eight
    other terms of N − M are summed in double-double. Each rounding is accepted only where its error bound
    decides it (0 is exact); elsewhere (other forms, or |v| outside [1e-186, 1e274]) ``ok`` is False.
    """
    n = len(values)
    if n == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool)
    width = 2 + DIGITS + 5  # sign, point, digits, e±XXX
    try:
        c = np.array(values, dtype=f"S{width + 1}").view(np.uint8).reshape(n, width + 1)
    except UnicodeEncodeError:
        return np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
    neg = c[:, 0] == ord("-")
    c = np.where(neg[:, None], c[:, 1:], c[:, :-1]).T.astype(np.int16, order="C")  # by position, sign dropped:
    digits = [c[0] - 48] + [c[j] - 48 for j in range(2, DIGITS + 1)]  # d . 33 digits e ± 1–3 digits, end
    ex = [c[DIGITS + 3 + j] - 48 for j in range(3)]
    ex_ok = [(e >= 0) & (e <= 9) for e in ex]
    ok = (
        (c[1] == ord("."))
        & (c[DIGITS + 1] == ord("e"))
        & ((c[DIGITS + 2] == ord("+")) | (c[DIGITS + 2] == ord("-")))
        & np.logical_and.reduce([(d >= 0) & (d <= 9) for d in digits])
        & ex_ok[0]
        & (ex_ok[1] | (c[DIGITS + 4] == 0))
        & (ex_ok[2] | (c[DIGITS + 5] == 0))
        & (ex_ok[1] | ~ex_ok[2])
        & (c[DIGITS + 6] == 0)
    )
    zero = ok & np.logical_and.reduce([d == 0 for d in digits])
    ok &= ~zero
    e10 = np.zeros(n, dtype=np.int64)
    for e, e_ok in zip(ex, ex_ok, strict=True):
        e10 = np.where(e_ok, e10 * 10 + e.astype(np.int64), e10)
    k = np.where(ok, np.where(c[DIGITS + 2] == ord("-"), -e10, e10) - (DIGITS - 1), 0)
    ok &= (k > -220) & (k < 240)  # |v| in [1e-186, 1e274]: every product below is exact, none underflows
    k = np.where(ok, k, 0)
    sign = np.where(neg, -1.0, 1.0)
    A, B, C = (
        functools.reduce(lambda acc, d: acc * 10.0 + np.where(ok, d, 0), digits[a:b], np.zeros(n)) * sign
        for a, b in ((0, 12), (12, 23), (23, DIGITS))
    )
    uk, inv = np.unique(k, return_inverse=True)
    p = np.array([_pow10(int(kk)) for kk in uk])[inv.reshape(-1)]  # 10^k per value
    q = np.array([_pow10(int(-kk)) for kk in uk])[inv.reshape(-1)]  # 10^-k
    with np.errstate(all="ignore"):
        a1, a2 = dd.two_prod(A, np.full(n, 1e22))
        b1, b2 = dd.two_prod(B, np.full(n, 1e11))
        N = dd.DD(a1, np.zeros(n))
        for t in (a2, b1, b2, C):
            N = dd.add_d(N, t)
        v = dd.mul(N, dd.DD(p[:, 0], p[:, 1]))
        ok &= _certain(v, 2.0**-99 * np.abs(v.hi))
        hi = np.where(ok, v.hi, 0.0)
        m1, m1e = dd.two_prod(hi, q[:, 0])
        m2, m2e = dd.two_prod(hi, q[:, 1])
        ok &= (np.abs(m1) <= 2 * np.abs(a1)) & (np.abs(a1) <= 2 * np.abs(m1))  # Sterbenz: a1 − m1 is exact
        terms = (a2, b1, b2, C, -m1e, -m2, -m2e, -(hi * q[:, 2]))
        d = dd.DD(a1 - m1, np.zeros(n))
        for t in terms:
            d = dd.add_d(d, t)  # N − M
        r = dd.mul(d, dd.DD(p[:, 0], p[:, 1]))  # v − hi = (N − M)·10^k
        size = np.abs(a1 - m1) + sum(np.abs(t) for t in terms)
        ok &= _certain(r, 2.0**-100 * np.abs(r.hi) + (2.0**-98 * size + 2.0**-150 * np.abs(m1)) * np.abs(p[:, 0]))
    return hi, np.where(ok, r.hi, 0.0), ok | zero


def decode_decimal(values: list[str], shape: list[int]) -> Golden:
    """Decimal strings → Golden(hi, lo): hi = the correctly rounded float64, lo = the rounded remainder."""
    hi, lo, ok = _decode_fast(values)
    for i in np.flatnonzero(~ok):
        hi[i], lo[i] = _decode_exact(values[i])
    hi[hi == 0], lo[lo == 0] = 0.0, 0.0  # the exact value 0 has no sign
    return Golden(hi.reshape(shape), lo.reshape(shape), "corpus", {"method": "corpus"})


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
@dataclasses.dataclass(eq=False)
class Case:
    """One stored case: exact inputs in ``dtype``, scalar parameters, the golden value.

    Values are decoded on first access and checked against the case's recorded sha256 (``inputs``, ``golden``);
    small cases are decoded when loaded, cases with recipe inputs (large) only when used.
    """

    family: str
    id: str
    description: str
    dtype: torch.dtype
    params: dict[str, Any]
    record: dict[str, Any]
    file: Path
    _inputs: dict[str, np.ndarray] | None = dataclasses.field(default=None, repr=False)
    _golden: Golden | None = dataclasses.field(default=None, repr=False)

    @property
    def inputs(self) -> dict[str, np.ndarray]:
        """The exact input values as float64 arrays (representable in ``dtype``), by name."""
        if self._inputs is None:
            self._inputs = _decode_inputs(self.record, self.file)
        return self._inputs

    @property
    def golden(self) -> Golden:
        """The stored golden value (hi + lo double-double, ≥ 100 bits) of the output."""
        if self._golden is None:
            self._golden = _decode_goldens([self.record], self.file)[0]
        return self._golden

    def tensor(self, name: str) -> torch.Tensor:
        """An input as a CPU tensor of the case's dtype (exact: the values are representable)."""
        return torch.from_numpy(self.inputs[name].copy()).to(self.dtype)

    @property
    def config(self) -> ModelConfig:
        """The Block's ModelConfig (block cases only)."""
        return ModelConfig(**self.params["config"])

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape of an input, without decoding it."""
        return tuple(self.record["inputs"][name]["shape"])

    @property
    def lazy(self) -> bool:
        """True for cases with recipe inputs (large: generated on first access)."""
        return any("recipe" in spec for spec in self.record["inputs"].values())

    @property
    def cost(self) -> int:
        """Number of input values (a proxy for the recomputation cost; picks the cheap sample to recompute)."""
        return sum(math.prod(spec["shape"]) for spec in self.record["inputs"].values())


def _refuse(path: Path, what: str) -> CorpusError:
    return CorpusError(f"{path}: {what}; {REGEN_HINT}")


def _load_json(path: Path, data: bytes | None = None) -> dict[str, Any]:
    """The JSON document of a corpus file (its bytes if already read), with its magic and version checked."""
    if data is None and not path.exists():
        raise _refuse(path, "missing")
    try:
        doc = json.loads((path.read_bytes() if data is None else data).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _refuse(path, f"not valid JSON (truncated or corrupted: {exc})") from None
    if not isinstance(doc, dict) or doc.get("magic") != MAGIC:
        raise _refuse(path, "not a nanolm-verify golden corpus file (bad magic)")
    if doc.get("format_version") != FORMAT_VERSION:
        raise _refuse(
            path,
            f"format version {doc.get('format_version')!r}, this nanolm-verify reads version {FORMAT_VERSION} "
            "— the file is stale",
        )
    return doc


def check_manifest(data_dir: Path = DATA_DIR, *, pinned: bool = True) -> dict[str, Any]:
    """Read MANIFEST.json and check its form: it lists exactly the family files, each with a sha256 and a size;
    ``pinned``: its bytes hash to :data:`MANIFEST_SHA256` (off only for a corpus being built: a regenerated folder
    before its pin is updated, a test's small corpus). (The files themselves are checked by :func:`check_file`.)
    CorpusError names the manifest and the fix."""
    path = Path(data_dir) / MANIFEST
    man = _load_json(path)
    files = man.get("files")
    expected = [f"{fam}.json" for fam in FAMILIES]
    if not isinstance(files, dict):
        raise _refuse(path, f"'files' must map each of {', '.join(expected)} to its sha256 and bytes, got {files!r}")
    if not files:
        raise _refuse(path, f"lists no files (expected {', '.join(expected)})")
    missing = [f for f in expected if f not in files]
    if missing:
        raise _refuse(path, f"does not list {', '.join(missing)} (every family must be listed)")
    unknown = [f for f in files if f not in expected]
    if unknown:
        raise _refuse(path, f"lists unknown files {', '.join(map(repr, unknown))} (expected {', '.join(expected)})")
    for name, meta in files.items():
        ok = isinstance(meta, dict) and isinstance(meta.get("sha256"), str) and _SHA256.fullmatch(meta["sha256"])
        size = meta.get("bytes") if isinstance(meta, dict) else None
        if not ok or not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise _refuse(path, f"entry for {name} must be {{'sha256': 64 hex digits, 'bytes': a size}}, got {meta!r}")
    if pinned:  # (last: a malformed manifest is told as such first)
        digest = file_sha256(path)
        if digest != MANIFEST_SHA256:
            raise CorpusError(
                f"{path}: sha256 {digest[:16]}… is not the corpus this version pins (golden/corpus.py "
                f"MANIFEST_SHA256 {MANIFEST_SHA256[:16]}…): the corpus was changed or swapped; restore it from git, "
                "or review the change and update the pin with it"
            )
    return man


def check_file(family: str, data_dir: Path = DATA_DIR, manifest: dict[str, Any] | None = None) -> bytes:
    """A family file's bytes, after checking its size and sha256 against the manifest (read and checked unless
    given)."""
    man = manifest if manifest is not None else check_manifest(data_dir)
    path = Path(data_dir) / f"{family}.json"
    meta = man["files"][path.name]
    if not path.exists():
        raise _refuse(path, f"listed in {MANIFEST} but missing")
    size = path.stat().st_size
    if size != meta["bytes"]:
        raise _refuse(path, f"{size} bytes, {MANIFEST} records {meta['bytes']} (truncated or modified)")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != meta["sha256"]:
        raise _refuse(
            path, f"sha256 {digest[:16]}… does not match {MANIFEST} ({meta['sha256'][:16]}…): the file was modified"
        )
    return data


def _is_shape(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in v)


def _record_problem(family: str, rec: Any) -> str | None:
    """What is wrong with the form of one case record (None if nothing)."""
    if not isinstance(rec, dict):
        return f"a case is a {type(rec).__name__}, not an object"
    for key, kind in (("id", str), ("description", str), ("dtype", str), ("params", dict), ("inputs", dict)):
        if not isinstance(rec.get(key), kind):
            return f"'{key}' must be a {kind.__name__}"
    for key in ("inputs_sha256", "golden_sha256"):
        if not isinstance(rec.get(key), str) or not _SHA256.fullmatch(rec[key]):
            return f"'{key}' must be 64 hex digits"
    if rec["dtype"] not in DTYPES:
        return f"dtype {rec['dtype']!r} is not one of {', '.join(DTYPES)}"
    if sorted(rec["inputs"]) != sorted(INPUTS[family]):
        return f"inputs {sorted(rec['inputs'])} are not the {family} inputs {list(INPUTS[family])}"
    for name, spec in rec["inputs"].items():
        if not isinstance(spec, dict) or not _is_shape(spec.get("shape")):
            return f"input {name} needs a 'shape' (a list of sizes)"
        n = math.prod(spec["shape"])
        if "hex" in spec:
            if not isinstance(spec["hex"], list) or len(spec["hex"]) != n:
                return f"input {name} must hold {n} hex values for shape {spec['shape']}"
        elif not isinstance(spec.get("recipe"), dict):
            return f"input {name} has neither 'hex' values nor a 'recipe'"
        elif not isinstance(spec["recipe"].get("seed"), int) or spec["recipe"].get("dtype") not in DTYPES:
            return f"input {name}'s recipe needs an integer 'seed' and a 'dtype'"
    g = rec.get("golden")
    if not isinstance(g, dict) or not _is_shape(g.get("shape")) or not isinstance(g.get("decimal"), list):
        return "'golden' needs a 'shape' and a 'decimal' list"
    if len(g["decimal"]) != math.prod(g["shape"]):
        return f"'golden' must hold {math.prod(g['shape'])} decimal strings for shape {g['shape']}"
    if family in _EPS_FAMILIES and not isinstance(rec["params"].get("eps"), str):
        return "params need 'eps' (a hex float)"
    if family == "block" and not isinstance(rec["params"].get("config"), dict):
        return "params need 'config' (the ModelConfig fields)"
    return None


def _params(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: (float.fromhex(v) if isinstance(v, str) and v.startswith(("0x", "-0x")) else v) for k, v in rec.items()}


def _decode_inputs(rec: dict[str, Any], path: Path) -> dict[str, np.ndarray]:
    dtype = fmt(rec["dtype"]).dtype
    inputs = {}
    try:
        for name, spec in rec["inputs"].items():
            if "hex" in spec:
                inputs[name] = decode_hex(spec["hex"], spec["shape"])
                exact = dtype == torch.float64 or np.array_equal(
                    round_to_grid(inputs[name], None, dtype), inputs[name], equal_nan=True
                )
                if not exact:
                    raise _refuse(path, f"case {rec['id']!r}: input {name} is not representable in {rec['dtype']}")
            else:
                r = spec["recipe"]
                sets = [(int(i), float.fromhex(v)) for i, v in r.get("set", [])]
                inputs[name] = recipe_values(r["seed"], spec["shape"], r["dtype"], r["scale"], r.get("mean"), sets)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise _refuse(path, f"case {rec['id']!r}: input {name} cannot be decoded ({exc})") from None
    if sha256_arrays(inputs, rec["params"]) != rec["inputs_sha256"]:
        raise _refuse(
            path, f"case {rec['id']!r}: inputs do not hash to the recorded sha256 (modified data or a changed recipe)"
        )
    return inputs


def _decode_goldens(recs: list[dict[str, Any]], path: Path) -> list[Golden]:
    """The golden values of several cases (decoded in one batch: the vectorised decoder has a fixed cost)."""
    strings = [s for rec in recs for s in rec["golden"]["decimal"]]
    try:
        g = decode_decimal(strings, [len(strings)])
    except (TypeError, ValueError, ArithmeticError) as exc:
        ids = ", ".join(repr(rec["id"]) for rec in recs)
        raise _refuse(path, f"case {ids}: golden values cannot be decoded ({exc})") from None
    out, start = [], 0
    for rec in recs:
        n = len(rec["golden"]["decimal"])
        hi, lo = g.hi[start : start + n].reshape(rec["golden"]["shape"]), g.lo[start : start + n]
        start += n
        if sha256_arrays({"hi": hi, "lo": lo.reshape(hi.shape)}) != rec["golden_sha256"]:
            raise _refuse(path, f"case {rec['id']!r}: golden values do not hash to the recorded sha256")
        if not np.isfinite(hi).all():  # every stored case has finite inputs and a finite exact output
            at = np.unravel_index(int(np.flatnonzero(~np.isfinite(hi))[0]), hi.shape)
            raise _refuse(
                path, f"case {rec['id']!r}: golden value at {tuple(map(int, at))} is {float(hi[at])!r}, not finite"
            )
        out.append(Golden(hi, lo.reshape(hi.shape), "corpus", {"method": "corpus", "case": rec["id"]}))
    return out


@functools.cache
def recipe(family: str) -> dict[str, dict[str, Any]]:
    """The cases the recipe (:mod:`golden.recipes`, which ``golden/data/generate.py`` writes) defines for a family:
    id → {"dtype", "shapes" (input → shape), "recipes" (input → its recipe, for inputs stored so)} — what a stored
    family must hold, and nothing else."""
    out = {}
    for spec in recipes.GENERATORS[family]():
        dt = spec["dtype"]
        values = {name: spec[name] for name in INPUTS[family]}
        out[spec["id"]] = {
            "dtype": dt,
            "shapes": {n: list(v.shape) for n, v in values.items()},
            "recipes": {n: v.spec(dt)["recipe"] for n, v in values.items() if isinstance(v, recipes.Recipe)},
        }
    return out


def _recipe_problem(family: str, rec: dict[str, Any], expected: dict[str, Any] | None) -> str | None:
    """What makes a well-formed case record differ from the generator's recipe (None if nothing): an id it does
    not define, another dtype, an input's shape or recipe, or a golden of another shape than the output's."""
    if expected is None:
        return "generate.py defines no such case"
    if rec["dtype"] != expected["dtype"]:
        return f"dtype {rec['dtype']} where the recipe has {expected['dtype']}"
    for name, shape in expected["shapes"].items():
        spec = rec["inputs"][name]
        if spec["shape"] != shape:
            return f"input {name} has shape {spec['shape']} where the recipe has {shape}"
        if name in expected["recipes"] and spec.get("recipe") != expected["recipes"][name]:
            return f"input {name}'s recipe {spec.get('recipe')!r} is not the generator's"
    if rec["golden"]["shape"] != expected["shapes"]["x"]:
        return f"golden has shape {rec['golden']['shape']}, the output's is {expected['shapes']['x']}"
    return None


def load_family(
    family: str, data_dir: Path = DATA_DIR, manifest: dict[str, Any] | None = None, *, pinned: bool = True
) -> tuple[dict, list]:
    """(header, cases) of one family, after checking the manifest (unless given) and the file's checksum. Every
    case must be one the generator defines, of its dtype and shapes (before anything is decoded: a huge shape is
    refused, not allocated); ``pinned`` (see :func:`check_manifest`): every case it defines must be there too."""
    if family not in FAMILIES:
        raise ValueError(f"unknown corpus family {family!r}; expected one of {', '.join(FAMILIES)}")
    path = Path(data_dir) / f"{family}.json"
    manifest = manifest if manifest is not None else check_manifest(data_dir, pinned=pinned)
    doc = _load_json(path, check_file(family, data_dir, manifest))
    if doc.get("family") != family:
        raise _refuse(path, f"holds family {doc.get('family')!r}, expected {family!r}")
    records = doc.get("cases")
    if not isinstance(records, list) or not records:
        raise _refuse(path, "lists no cases")
    if len(records) != doc.get("n_cases"):
        raise _refuse(path, f"{len(records)} cases, header says {doc.get('n_cases')} (truncated?)")
    cases, seen = [], set()
    for rec in records:
        problem = _record_problem(family, rec)
        if problem is None and rec["id"] in seen:
            problem = "the id is not unique"
        if problem:
            raise _refuse(path, f"case {rec.get('id') if isinstance(rec, dict) else '?'!r} is malformed: {problem}")
        problem = _recipe_problem(family, rec, recipe(family).get(rec["id"]))
        if problem:
            raise _refuse(path, f"case {rec['id']!r} is not the recipe's: {problem}")
        seen.add(rec["id"])
        try:
            params = _params(rec["params"])
        except (ValueError, OverflowError) as exc:
            raise _refuse(path, f"case {rec['id']!r}: params cannot be decoded ({exc})") from None
        cases.append(Case(family, rec["id"], rec["description"], fmt(rec["dtype"]).dtype, params, rec, path))
    missing = [i for i in recipe(family) if i not in seen]
    if pinned and missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise _refuse(path, f"lacks {len(missing)} case(s) of the recipe: {', '.join(missing[:3])}{more}")
    small = [c for c in cases if not c.lazy]  # decode and check now; recipe cases (large) when first used
    for case, g in zip(small, _decode_goldens([c.record for c in small], path), strict=True):
        case._golden = g
        _ = case.inputs
    return {k: v for k, v in doc.items() if k != "cases"}, cases


def cases(family: str, data_dir: Path = DATA_DIR, *, pinned: bool = True) -> list[Case]:
    """The stored cases of a family (``FAMILIES``), after checking MANIFEST.json (``pinned``: against
    :data:`MANIFEST_SHA256`) and the family file's size and sha256, and every case against the generator's recipe.
    Cases with recipe inputs decode (and check) their values on first use."""
    return load_family(family, data_dir, pinned=pinned)[1]


def iter_all(data_dir: Path = DATA_DIR, *, pinned: bool = True) -> Iterator[Case]:
    man = check_manifest(data_dir, pinned=pinned)
    for fam in FAMILIES:
        yield from load_family(fam, data_dir, man, pinned=pinned)[1]


# ---------------------------------------------------------------------------------------- recompute
def golden_of(family: str, tensors: Mapping[str, torch.Tensor], params: Mapping[str, Any], **opts: Any) -> Golden:
    """The engine's golden value for a family's inputs (``INPUTS[family]``) and parameters."""
    t = tensors
    if family == "rmsnorm":
        return engine.rmsnorm(t["x"], t["weight"], params["eps"], **opts)
    if family == "swiglu":
        return engine.swiglu(t["x"], t["w_gate"], t["w_up"], t["w_down"], **opts)
    if family == "block":
        return engine.block(t["x"], {k: t[k] for k in engine.BLOCK_PARAMS}, ModelConfig(**params["config"]), **opts)
    if family == "add_rmsnorm":
        return engine.add_rmsnorm(t["x"], t["residual"], t["weight"], params["eps"], **opts)[0]
    raise ValueError(f"unknown corpus family {family!r}; expected one of {', '.join(FAMILIES)}")


def recompute(case: Case, **opts: Any) -> Golden:
    """The engine's golden value for a stored case (for ``golden verify``)."""
    return golden_of(case.family, {n: case.tensor(n) for n in INPUTS[case.family]}, case.params, **opts)


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
    """MANIFEST.json over every family file in data_dir (all must exist)."""
    files = {}
    for fam in FAMILIES:
        p = data_dir / f"{fam}.json"
        if not p.exists():
            raise CorpusError(f"{p}: missing; the manifest must list every family — generate all of them")
        files[p.name] = {"sha256": file_sha256(p), "bytes": p.stat().st_size}
    doc = {"magic": MAGIC, "format_version": FORMAT_VERSION, "generator_version": generator_version, "files": files}
    (data_dir / MANIFEST).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
