"""Fuzz of the core's inputs: 1,480 malformed calls from a fixed seed, each a ValueError or TypeError that names
the argument, and valid calls from the same generator accepted (the checks are not over-strict).

Every public constructor and forward of ``nanolm_core`` (and ``default_ffn_dim``) is a *target*: one call with one
argument drawn bad — the others drawn good — ``PER_TARGET`` times, each kind of bad value in turn.

A message *names the argument* when it starts with ``"<who>: "`` (the class or function called), contains the
argument — the constructor's or forward's parameter, or the ModelConfig field — as a word, and contains the
offending value: its repr (cut to its first 57 characters when longer than 60, as the core shows it), or for a
tensor the attribute that is wrong (dtype, shape, T, device, or a bad token id with its position).
"""

from __future__ import annotations

import dataclasses
import decimal
import fractions
import functools
import math
import random
import re
import string
import types
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch

import nanolm_core
from golden.formats import FORMATS
from nanolm_core import ModelConfig

SEED = 20261201
LIMIT = 2**24  # the largest accepted size, restated here (nanolm_core._checks.MAX_SIZE says why)
PER_TARGET = 40  # malformed calls per target
VALID_PER_TARGET = 8
SEQ = ModelConfig(dim=16, n_layers=1, n_heads=4, n_kv_heads=2, vocab_size=50, max_seq_len=8, ffn_dim=24)
FLOATS = tuple(f.dtype for f in FORMATS)
NOT_FLOATS = (torch.int64, torch.int32, torch.int16, torch.uint8, torch.bool, torch.complex64, torch.complex128)


class Case(NamedTuple):
    """One call of ``who`` with ``argument`` drawn of ``kind``; ``fragment`` is what its message must show."""

    who: str
    argument: str
    kind: str
    fragment: str
    call: Callable[[], Any]


def value_text(value: Any) -> str:
    """What a message must show of a value: its repr, cut to 57 characters where the core cuts it (over 60)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57]


def names_the_argument(message: str, case: Case) -> bool:
    word = rf"(?<!\w){re.escape(case.argument)}(?!\w)"
    return message.startswith(f"{case.who}: ") and bool(re.search(word, message)) and case.fragment in message


def outcome(case: Case) -> str:
    """ "named", or what went wrong: "accepted", "unnamed: <message>" or "<other exception>: <message>"."""
    try:
        case.call()
    except (ValueError, TypeError) as exc:
        return "named" if names_the_argument(str(exc), case) else f"unnamed: {exc}"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "accepted"


class Draw(random.Random):
    """A seeded source of good and bad argument values; ``pick`` takes the kinds of bad value in turn."""

    def __init__(self, seed: str) -> None:
        super().__init__(seed)
        self.turn = 0

    def pick(self, options: dict[str, Callable[[], Any]]) -> tuple[str, Any]:
        kind = sorted(options)[self.turn % len(options)]
        self.turn += 1
        return kind, options[kind]()

    def word(self) -> str:
        return "".join(self.choices(string.ascii_letters + string.digits + " .-", k=self.randint(0, 12)))

    def not_a_number(self) -> dict[str, Callable[[], Any]]:
        """Wrong for every scalar argument."""
        return {
            "bool": lambda: self.choice([True, False]),
            "str": self.word,
            "None": lambda: None,
            "complex": lambda: complex(self.uniform(-9, 9), self.choice([0.0, 1.0])),
            "tensor": lambda: self.choice([torch.tensor(self.randint(1, 64)), torch.tensor(1e-6), torch.ones(2)]),
            "container": lambda: self.choice([[64], (64,), {"dim": 64}, {1e-6}]),
            "other object": lambda: self.choice([object(), decimal.Decimal(64), np.array([64]), type]),
        }

    def non_finite(self) -> Any:
        return self.choice([math.nan, math.inf, -math.inf, np.float32("nan"), np.float64("inf"), 10**400, -(10**400)])

    def bad_size(self, none_ok: bool = False) -> tuple[str, Any]:
        bad = self.not_a_number()
        if none_ok:
            del bad["None"]
        return self.pick(
            {
                **bad,
                "zero": lambda: self.choice([0, np.int64(0), np.uint8(0)]),
                "negative": lambda: self.choice([-1, -self.randint(2, 2**63), np.int32(-self.randint(1, 2**31))]),
                "too large": lambda: self.choice([LIMIT + 1, 2**62, self.randint(LIMIT + 2, 2**70), np.int64(2**40)]),
                "float": lambda: self.choice(
                    [float(self.randint(1, 4096)), self.uniform(0.5, 4096), np.float64(64), fractions.Fraction(64)]
                ),
                "non-finite": self.non_finite,
                "numpy bool": lambda: np.bool_(self.random() < 0.5),
            }
        )

    def good_size(self, hi: int = LIMIT) -> Any:
        n = self.choice([1, hi, self.randint(1, hi), self.randint(1, min(hi, 64))])
        return self.choice([int, np.int64, np.int32, np.uint32])(n)

    def bad_real(self, zero_ok: bool) -> tuple[str, Any]:
        negative = [-self.uniform(1e-12, 1.0), -5e-324, -1, np.float64(-1e-6), fractions.Fraction(-1, 10**6)]
        options = {**self.not_a_number(), "negative": lambda: self.choice(negative), "non-finite": self.non_finite}
        if not zero_ok:
            options["zero"] = lambda: self.choice([0, 0.0, -0.0, np.float64(0)])
        return self.pick(options)

    def good_eps(self) -> Any:
        return self.choice(
            [0, 0.0, -0.0, 5e-324, 1e-6, self.uniform(0, 1), 1e300, np.float32(1e-5), fractions.Fraction(1, 10**6)]
        )

    def good_theta(self) -> Any:
        return self.choice([10000.0, 500000.0, 1, self.uniform(1e-3, 1e7), 1e300, np.float64(1e4), np.int64(10000)])

    def bad_flag(self) -> tuple[str, Any]:
        return self.pick(
            {
                "int": lambda: self.choice([0, 1, np.int64(1)]),
                "float": lambda: self.choice([0.0, 1.0, math.nan]),
                "str": lambda: self.choice(["True", "false", self.word()]),
                "None": lambda: None,
                "numpy bool": lambda: np.bool_(self.random() < 0.5),
                "tensor": lambda: torch.tensor(True),
                "container": lambda: [True],
            }
        )

    def good_config(self, max_dim: int = 2**22, max_layers: int = LIMIT, **fields: Any) -> ModelConfig:
        """H ∈ 1…8, G a divisor of H, K even with D = H·K ≤ max_dim; F derived (then ≤ 2**24) or drawn."""
        H = self.randint(1, 8)
        G = self.choice([g for g in range(1, H + 1) if H % g == 0])
        D = H * 2 * self.choice([1, self.randint(1, max_dim // (2 * H))])
        drawn = {
            "dim": D,
            "n_heads": H,
            "n_kv_heads": G,
            "n_layers": self.good_size(max_layers),
            "vocab_size": self.good_size(),
            "multiple_of": self.good_size(2**22),  # then a derived F < 8D/3 + multiple_of stays ≤ 2**24
            "max_seq_len": self.good_size(),
            "norm_eps": self.good_eps(),
            "rope_theta": self.good_theta(),
            "tie_embeddings": self.choice([True, False]),
            "ffn_dim": self.choice([None, self.good_size()]),
        }
        return ModelConfig(**{**drawn, **fields})


def on_meta(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Construct on the meta device: a valid 2**24-wide module allocates nothing."""
    with torch.device("meta"):
        return fn(*args, **kwargs)


# ---- constructors and default_ffn_dim: one argument bad, the others good --------------------------------------

KINDS = {  # kind of argument → (bad draw, good draw)
    "size": (Draw.bad_size, Draw.good_size),
    "size or None": (lambda d: d.bad_size(none_ok=True), lambda d: d.choice([None, d.good_size()])),
    "eps": (lambda d: d.bad_real(zero_ok=True), Draw.good_eps),
    "theta": (lambda d: d.bad_real(zero_ok=False), Draw.good_theta),
    "flag": (Draw.bad_flag, lambda d: d.choice([True, False])),
}
SIGNATURES = {  # who → (callable, {parameter: kind})
    "RMSNorm": (nanolm_core.RMSNorm, {"dim": "size", "eps": "eps"}),
    "LayerNorm": (nanolm_core.LayerNorm, {"dim": "size", "eps": "eps"}),
    "SwiGLU": (nanolm_core.SwiGLU, {"dim": "size", "hidden_dim": "size"}),
    "ReLUFFN": (nanolm_core.ReLUFFN, {"dim": "size", "hidden_dim": "size or None"}),
    "default_ffn_dim": (nanolm_core.default_ffn_dim, {"dim": "size", "multiple_of": "size"}),
}
FIELDS = {f.name: "size" for f in dataclasses.fields(ModelConfig)} | {
    "norm_eps": "eps",
    "rope_theta": "theta",
    "tie_embeddings": "flag",
    "ffn_dim": "size or None",
}


def constructor_case(who: str, argument: str, d: Draw, valid: bool) -> Case:
    fn, params = SIGNATURES[who]
    kwargs = {p: KINDS[kind][1](d) for p, kind in params.items()}
    kind = "valid"
    if not valid:
        kind, kwargs[argument] = KINDS[params[argument]][0](d)
    return Case(who, argument, kind, value_text(kwargs[argument]), lambda: on_meta(fn, **kwargs))


def config_field_case(field: str, d: Draw, valid: bool) -> Case:
    base = dataclasses.asdict(d.good_config())
    kind = "valid"
    if not valid:
        kind, base[field] = KINDS[FIELDS[field]][0](d)
    return Case("ModelConfig", field, kind, value_text(base[field]), lambda: ModelConfig(**base))


def config_consistency_case(field: str, d: Draw, valid: bool) -> Case:
    """A valid size that breaks H | D, G | H or K even: the message shows ``field=value``."""
    base = dataclasses.asdict(d.good_config())
    D, H = base["dim"], base["n_heads"]
    if not valid:
        if field == "n_heads":  # H ∤ D: some h ≤ 21 qualifies, as lcm(2…21) > 2**22 ≥ D
            base["n_heads"] = d.choice([h for h in range(2, min(D, 500) + 2) if D % h])
        elif field == "n_kv_heads":  # G ∤ H
            base["n_kv_heads"] = d.choice([g for g in range(2, H + 2) if H % g])
        else:  # dim = H·K with K odd
            base["dim"] = H * (2 * d.randint(0, 1000) + 1)
    fragment = f"{field}={base[field]}"
    return Case("ModelConfig", field, "inconsistent" if not valid else "valid", fragment, lambda: ModelConfig(**base))


def config_argument_case(who: str, d: Draw, valid: bool) -> Case:
    cls = getattr(nanolm_core, who)
    good = d.good_config(max_dim=4096, max_layers=2)
    fields = dataclasses.asdict(good)
    lookalike = dataclasses.make_dataclass("ModelConfig", list(fields))  # same name and fields, another class
    kind, config = (
        ("valid", good)
        if valid
        else d.pick(
            {
                "dict": lambda: dict(fields),
                "namespace": lambda: types.SimpleNamespace(**fields),
                "look-alike": lambda: lookalike(**fields),
                "the class": lambda: ModelConfig,
                "None": lambda: None,
                "str": lambda: d.choice(["tiny", "llama-7b", d.word()]),
                "int": lambda: d.randint(-5, 4096),
                "list": lambda: [good],
            }
        )
    )
    return Case(who, "config", kind, value_text(config), lambda: on_meta(cls, config))


def block_cls_case(d: Draw, valid: bool) -> Case:
    kind, block_cls = (
        ("valid", d.choice([nanolm_core.Block, nanolm_core.PostNormBlock]))
        if valid
        else d.pick(
            {
                "function": lambda: lambda config: nanolm_core.Block(config),
                "instance": lambda: torch.nn.Identity(),
                "str": lambda: "Block",
                "None": lambda: None,
                "other class": lambda: d.choice([torch.Tensor, int, ModelConfig]),
            }
        )
    )
    config = d.good_config(max_dim=512, max_layers=2)
    return Case(
        "Transformer",
        "block_cls",
        kind,
        value_text(block_cls),
        lambda: on_meta(nanolm_core.Transformer, config, block_cls),
    )


# ---- forwards: the module's single input drawn bad ---------------------------------------------------------------

FORWARDS = {  # who → (build(dtype), sequence input (B, T, D)?, input must have the module's dtype?)
    "RMSNorm": (lambda: nanolm_core.RMSNorm(SEQ.dim), False, False),
    "LayerNorm": (lambda: nanolm_core.LayerNorm(SEQ.dim), False, False),
    "SwiGLU": (lambda: nanolm_core.SwiGLU(SEQ.dim, SEQ.ffn_dim), False, True),
    "ReLUFFN": (lambda: nanolm_core.ReLUFFN(SEQ.dim), False, True),
    "Attention": (lambda: nanolm_core.Attention(SEQ), True, True),
    "Block": (lambda: nanolm_core.Block(SEQ), True, True),
    "PostNormBlock": (lambda: nanolm_core.PostNormBlock(SEQ), True, True),
}


@functools.cache
def module(who: str, dtype: torch.dtype) -> torch.nn.Module:
    return FORWARDS[who][0]().to(dtype).eval()


def not_a_tensor(d: Draw, like: torch.Tensor) -> tuple[Any, str]:
    value = d.choice([like.tolist(), like.float().numpy(), None, 1.0, "x", tuple(range(like.shape[-1]))])
    return value, type(value).__name__


def by_dtype(t: torch.Tensor) -> tuple[torch.Tensor, str]:
    return t, str(t.dtype)


def by_shape(t: torch.Tensor) -> tuple[torch.Tensor, str]:
    return t, str(tuple(t.shape))


def too_long(d: Draw, *rest: int, dtype: torch.dtype) -> tuple[torch.Tensor, str]:
    T = SEQ.max_seq_len + d.randint(1, 8)
    return torch.zeros(1, T, *rest, dtype=dtype), f"T={T}"


def forward_case(who: str, d: Draw, valid: bool) -> Case:
    _, sequence, same_dtype = FORWARDS[who]
    D, dtype = SEQ.dim, d.choice([torch.float32, torch.float64])
    if sequence:
        lead = (d.randint(0, 2), d.randint(0, SEQ.max_seq_len))  # (B, T), either may be 0
    else:
        lead = tuple(d.randint(0, 3) for _ in range(d.randint(0, 3)))
    good = torch.randn(*lead, D, dtype=torch.float64).to(dtype if same_dtype else d.choice(FLOATS))
    bad = {
        "not a tensor": lambda: not_a_tensor(d, good),
        "dtype": lambda: by_dtype(torch.zeros(*lead, D, dtype=d.choice(NOT_FLOATS))),
        "last dimension": lambda: by_shape(torch.zeros(*lead, d.choice([1, D - 1, D + 1, 2 * D, 3]), dtype=dtype)),
        "0-dimensional": lambda: (torch.tensor(1.0, dtype=dtype), "()"),
        "device": lambda: (torch.empty(*lead, D, dtype=dtype, device="meta"), "meta"),
    }
    if same_dtype:
        bad["dtype mismatch"] = lambda: by_dtype(good.to(d.choice([f for f in FLOATS if f != dtype])))
    if sequence:
        bad["rank"] = lambda: by_shape(
            torch.zeros(*d.choice([(D,), (2, D), (1, 1, 2, D), (1, 1, 1, 1, D)]), dtype=dtype)
        )
        bad["T > max_seq_len"] = lambda: too_long(d, D, dtype=dtype)
    kind, (x, fragment) = ("valid", (good, "")) if valid else d.pick(bad)
    return Case(who, "x", kind, fragment, lambda: module(who, dtype)(x))


def first_bad_id(tokens: torch.Tensor, V: int) -> str:
    """``tokens[b, t]=id`` of the first id outside [0, V) in row-major order, found the slow way."""
    for b, row in enumerate(tokens.tolist()):
        for t, token in enumerate(row):
            if not 0 <= token < V:
                return f"tokens[{b}, {t}]={token}"
    raise AssertionError("no bad id")


def out_of_range(d: Draw, tokens: torch.Tensor) -> tuple[torch.Tensor, str]:
    """1 to 3 ids replaced by −1, V, the dtype's extremes or values between."""
    top, V = torch.iinfo(tokens.dtype).max, SEQ.vocab_size
    bad = tokens.clone()
    for _ in range(d.randint(1, 3)):
        bad[d.randrange(bad.shape[0]), d.randrange(bad.shape[1])] = d.choice(
            [-1, -d.randint(1, top), V, d.randint(V, top), top]
        )
    return bad, first_bad_id(bad, V)


def tokens_case(d: Draw, valid: bool) -> Case:
    B, T, V = d.randint(0 if valid else 1, 3), d.randint(0 if valid else 1, SEQ.max_seq_len), SEQ.vocab_size
    ids = [[d.choice([0, V - 1, d.randrange(V)]) for _ in range(T)] for _ in range(B)]
    good = torch.tensor(ids, dtype=d.choice([torch.int64, torch.int32])).view(B, T)
    bad = {
        "not a tensor": lambda: not_a_tensor(d, good),
        "dtype": lambda: by_dtype(
            good.to(d.choice([torch.float32, torch.float64, torch.bool, torch.int16, torch.uint8]))
        ),
        "rank": lambda: by_shape(d.choice([good.flatten(), good[None], good[0, 0]])),
        "T > max_seq_len": lambda: too_long(d, dtype=torch.int64),
        "device": lambda: (good.to("meta"), "meta"),
        "id out of range": lambda: out_of_range(d, good),
    }
    kind, (tokens, fragment) = ("valid", (good, "")) if valid else d.pick(bad)
    return Case("Transformer", "tokens", kind, fragment, lambda: transformer()(tokens))


@functools.cache
def transformer() -> torch.nn.Module:
    return nanolm_core.Transformer(SEQ).eval()


# ---- the targets ---------------------------------------------------------------------------------------------------

TARGETS: dict[str, Callable[[Draw, bool], Case]] = {
    **{
        f"{who}({p})": functools.partial(constructor_case, who, p)
        for who, (_, params) in SIGNATURES.items()
        for p in params
    },
    **{f"ModelConfig({field})": functools.partial(config_field_case, field) for field in FIELDS},
    **{
        f"ModelConfig({field}, inconsistent)": functools.partial(config_consistency_case, field)
        for field in ("n_heads", "n_kv_heads", "dim")
    },
    **{
        f"{who}(config)": functools.partial(config_argument_case, who)
        for who in ("Attention", "Block", "PostNormBlock", "Transformer")
    },
    "Transformer(block_cls)": block_cls_case,
    **{f"{who}.forward(x)": functools.partial(forward_case, who) for who in FORWARDS},
    "Transformer.forward(tokens)": tokens_case,
}


def fuzz(target: str, valid: bool) -> list[Case]:
    draw = Draw(f"{SEED}:{target}:{'valid' if valid else 'malformed'}")
    return [TARGETS[target](draw, valid) for _ in range(VALID_PER_TARGET if valid else PER_TARGET)]


@pytest.mark.parametrize("target", TARGETS)
def test_every_malformed_call_raises_a_value_or_type_error_naming_the_argument(target):
    failures = [
        f"{c.kind} ({c.argument}, {c.fragment}): {o}" for c in fuzz(target, valid=False) if (o := outcome(c)) != "named"
    ]
    assert not failures, f"{len(failures)} of {PER_TARGET} malformed calls of {target}:\n" + "\n".join(failures)


@pytest.mark.parametrize("target", TARGETS)
def test_valid_calls_from_the_same_generator_are_accepted(target):
    for case in fuzz(target, valid=True):
        case.call()


def test_the_fuzz_makes_over_1000_malformed_calls_of_every_kind_on_every_target():
    cases = {target: fuzz(target, valid=False) for target in TARGETS}
    assert sum(map(len, cases.values())) >= 1000
    assert all(min(Counter(c.kind for c in cs).values()) >= 2 for cs in cases.values())
