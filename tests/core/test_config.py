"""ModelConfig: derived sizes, presets, and validation errors that name the field."""

import dataclasses

import pytest

from nanolm_core import CONFIGS, ModelConfig


def test_head_dim_and_rep_are_derived():
    cfg = ModelConfig(dim=96, n_heads=6, n_kv_heads=2)
    assert (cfg.head_dim, cfg.n_rep) == (16, 3)


def test_explicit_ffn_dim_wins_over_the_derived_one():
    assert ModelConfig(dim=4096, n_heads=32, n_kv_heads=8, ffn_dim=14336).ffn_dim == 14336
    assert CONFIGS["llama3-8b"].ffn_dim == 14336


def test_presets_are_llama_shaped():
    cfg = CONFIGS["llama-7b"]
    assert (cfg.dim, cfg.n_heads, cfg.head_dim, cfg.ffn_dim) == (4096, 32, 128, 11008)


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        CONFIGS["tiny"].dim = 3


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"dim": 0}, "dim"),
        ({"dim": -64}, "dim"),
        ({"n_layers": 0}, "n_layers"),
        ({"n_heads": 0}, "n_heads"),
        ({"n_kv_heads": -1}, "n_kv_heads"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"max_seq_len": 0}, "max_seq_len"),
        ({"multiple_of": 0}, "multiple_of"),
        ({"dim": 66, "n_heads": 4}, "n_heads"),
        ({"n_heads": 4, "n_kv_heads": 3}, "n_kv_heads"),
        ({"ffn_dim": 0}, "ffn_dim"),
        ({"norm_eps": -1e-6}, "norm_eps"),
        ({"norm_eps": float("nan")}, "norm_eps"),
        ({"rope_theta": 0.0}, "rope_theta"),
        ({"dim": 24, "n_heads": 8, "n_kv_heads": 2}, "head_dim"),
    ],
)
def test_inconsistent_values_raise_value_error_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        ModelConfig(**kwargs)


def test_non_integer_sizes_raise_type_error_naming_the_field():
    with pytest.raises(TypeError, match="dim"):
        ModelConfig(dim=64.0)
