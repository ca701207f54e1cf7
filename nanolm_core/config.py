"""Model configuration: one frozen dataclass, derived sizes in one place, named presets.

Notation (the course's): D = dim, H = n_heads, G = n_kv_heads, K = head_dim = D // H,
F = ffn_dim, V = vocab_size, L = n_layers, T ≤ max_seq_len.
"""

from __future__ import annotations

import dataclasses
import math

from nanolm_core._checks import MAX_SIZE, check_bool, check_eps, check_positive, check_size

__all__ = ["CONFIGS", "ModelConfig", "default_ffn_dim"]


def default_ffn_dim(dim: int, multiple_of: int = 256) -> int:
    """F = multiple_of · ceil((8·D/3) / multiple_of): SwiGLU's three matrices cost 3·D·F ≈ 2·D·4D."""
    dim = check_size(dim, "dim", "default_ffn_dim")
    multiple_of = check_size(multiple_of, "multiple_of", "default_ffn_dim")
    return multiple_of * math.ceil((8 * dim / 3) / multiple_of)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Sizes of the pre-norm transformer; ``ffn_dim=None`` derives F from D (Llama: D=4096 → 11008).

    Accepted (else TypeError/ValueError naming the field and its value): every size — dim, n_layers, n_heads,
    n_kv_heads, vocab_size, multiple_of, max_seq_len and ffn_dim (given or derived) — an integral number (not
    bool) in 1 … 2**24, stored as int; norm_eps a finite real ≥ 0 and rope_theta a finite real > 0, stored as
    float; tie_embeddings a bool; H | D, G | H and K = D // H even.

    Note: ``dataclasses.replace(cfg, dim=...)`` keeps the resolved F; pass ``ffn_dim=None`` to re-derive it.
    """

    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    vocab_size: int = 256
    multiple_of: int = 256
    norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    max_seq_len: int = 128
    tie_embeddings: bool = True
    ffn_dim: int | None = None  # F; None → multiple_of · ceil((8D/3) / multiple_of), resolved once below

    def __post_init__(self) -> None:
        # Each field is checked and stored normalised (numpy ints → int), so that a config prints, compares
        # and serialises alike whatever built it; F is resolved here, once, as the contract names it ffn_dim.
        for name, check in _FIELD_CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name), name, "ModelConfig"))
        if self.ffn_dim is None:
            F = default_ffn_dim(self.dim, self.multiple_of)
            if F > MAX_SIZE:
                raise ValueError(
                    f"ModelConfig: ffn_dim=None derives F={F} from dim={self.dim} and multiple_of={self.multiple_of}, "
                    f"over 2**24 = {MAX_SIZE}; give ffn_dim"
                )
            object.__setattr__(self, "ffn_dim", F)
        object.__setattr__(self, "ffn_dim", check_size(self.ffn_dim, "ffn_dim", "ModelConfig"))
        D, H, G = self.dim, self.n_heads, self.n_kv_heads
        if D % H:
            raise ValueError(f"ModelConfig: dim={D} is not divisible by n_heads={H}")
        if H % G:
            raise ValueError(f"ModelConfig: n_heads={H} is not divisible by n_kv_heads={G}")
        if self.head_dim % 2:
            raise ValueError(
                f"ModelConfig: head_dim = dim // n_heads = {self.head_dim} must be even for rotate-half RoPE "
                f"(dim={D}, n_heads={H})"
            )

    @property
    def head_dim(self) -> int:
        """K = D // H."""
        return self.dim // self.n_heads

    @property
    def n_rep(self) -> int:
        """Query heads per kv head, H / G: query head h reads kv head h // n_rep."""
        return self.n_heads // self.n_kv_heads


_SIZES = ("dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "multiple_of", "max_seq_len")
_FIELD_CHECKS = {
    **dict.fromkeys(_SIZES, check_size),
    "norm_eps": check_eps,
    "rope_theta": check_positive,
    "tie_embeddings": check_bool,
}

CONFIGS: dict[str, ModelConfig] = {
    "tiny": ModelConfig(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=256, max_seq_len=128),
    "small": ModelConfig(dim=256, n_layers=4, n_heads=8, n_kv_heads=2, vocab_size=1024, max_seq_len=512),
    "llama-7b": ModelConfig(
        dim=4096, n_layers=32, n_heads=32, n_kv_heads=32, vocab_size=32000, max_seq_len=4096, tie_embeddings=False
    ),
    "llama3-8b": ModelConfig(
        dim=4096,
        n_layers=32,
        n_heads=32,
        n_kv_heads=8,
        vocab_size=128256,
        max_seq_len=8192,
        rope_theta=500000.0,
        norm_eps=1e-5,
        ffn_dim=14336,
        tie_embeddings=False,
    ),
}
