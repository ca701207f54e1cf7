"""Model configuration: one frozen dataclass, derived sizes in one place, named presets.

Notation (the course's): D = dim, H = n_heads, G = n_kv_heads, K = head_dim = D // H,
F = ffn_dim, V = vocab_size, L = n_layers, T ≤ max_seq_len.
"""

from __future__ import annotations

import dataclasses
import math

__all__ = ["CONFIGS", "ModelConfig", "default_ffn_dim"]


def default_ffn_dim(dim: int, multiple_of: int = 256) -> int:
    """F = multiple_of · ceil((8·D/3) / multiple_of): SwiGLU's three matrices cost 3·D·F ≈ 2·D·4D."""
    return multiple_of * math.ceil((8 * dim / 3) / multiple_of)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Sizes of the pre-norm transformer; ``ffn_dim=None`` derives F from D (Llama: D=4096 → 11008).

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
        for name in ("dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "multiple_of", "max_seq_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"ModelConfig.{name} must be an int, got {type(value).__name__} {value!r}")
            if value <= 0:
                raise ValueError(f"ModelConfig.{name} must be positive, got {value}")
        if self.ffn_dim is None:
            # The contract lets callers give F under the name ffn_dim, so the default is resolved here, once.
            object.__setattr__(self, "ffn_dim", default_ffn_dim(self.dim, self.multiple_of))
        if isinstance(self.ffn_dim, bool) or not isinstance(self.ffn_dim, int) or self.ffn_dim <= 0:
            raise ValueError(f"ModelConfig.ffn_dim must be a positive int or None, got {self.ffn_dim!r}")
        if not (isinstance(self.norm_eps, (int, float)) and math.isfinite(self.norm_eps) and self.norm_eps >= 0):
            raise ValueError(f"ModelConfig.norm_eps must be a finite float >= 0, got {self.norm_eps!r}")
        if not (isinstance(self.rope_theta, (int, float)) and self.rope_theta > 0):
            raise ValueError(f"ModelConfig.rope_theta must be positive, got {self.rope_theta!r}")
        if self.dim % self.n_heads:
            raise ValueError(f"ModelConfig.dim={self.dim} is not divisible by n_heads={self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"ModelConfig.n_heads={self.n_heads} is not divisible by n_kv_heads={self.n_kv_heads}")
        if self.head_dim % 2:
            raise ValueError(f"ModelConfig.dim/n_heads = head_dim={self.head_dim} must be even for rotate-half RoPE")

    @property
    def head_dim(self) -> int:
        """K = D // H."""
        return self.dim // self.n_heads

    @property
    def n_rep(self) -> int:
        """Query heads per kv head, H / G: query head h reads kv head h // n_rep."""
        return self.n_heads // self.n_kv_heads


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
