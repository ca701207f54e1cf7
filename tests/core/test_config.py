"""ModelConfig: derived sizes, presets, and validation errors that name the field."""

import dataclasses
import json

import numpy as np
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


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"dim": True}, TypeError, r"ModelConfig: dim=True \(bool\) must be an int"),
        ({"dim": 2**62}, ValueError, "ModelConfig: dim=4611686018427387904 must be a positive int ≤ 2\\*\\*24"),
        ({"vocab_size": "32000"}, TypeError, r"ModelConfig: vocab_size='32000' \(str\) must be an int"),
        ({"norm_eps": float("inf")}, ValueError, "ModelConfig: norm_eps=inf must be finite"),
        ({"rope_theta": float("nan")}, ValueError, "ModelConfig: rope_theta=nan must be finite"),
        ({"tie_embeddings": 1}, TypeError, r"ModelConfig: tie_embeddings=1 \(int\) must be a bool"),
        ({"ffn_dim": 2.0}, TypeError, r"ModelConfig: ffn_dim=2.0 \(float\) must be an int"),
        ({"dim": 2**23, "n_heads": 2**10}, ValueError, "ffn_dim=None derives F=22369792 from dim=8388608"),
    ],
)
def test_bad_field_raises_naming_field_and_value(kwargs, error, message):
    with pytest.raises(error, match=message):
        ModelConfig(**kwargs)


def test_numpy_sizes_are_stored_as_python_ints_so_the_config_serialises():
    cfg = ModelConfig(dim=np.int64(64), n_heads=np.int32(4), norm_eps=np.float32(0.5), rope_theta=10000)
    assert cfg == ModelConfig(dim=64, n_heads=4, norm_eps=0.5)
    assert json.loads(json.dumps(dataclasses.asdict(cfg)))["dim"] == 64
