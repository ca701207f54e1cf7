"""Bad input to the reference core gets a clear ValueError/TypeError naming the problem, and no mutation."""

import numpy as np
import pytest
import torch

from nanolm_core import CONFIGS, Block, LayerNorm, RMSNorm, SwiGLU, Transformer

CFG = CONFIGS["tiny"]  # D=64, H=4, G=2, max_seq_len=128


def modules():
    return {
        "RMSNorm": RMSNorm(CFG.dim),
        "LayerNorm": LayerNorm(CFG.dim),
        "SwiGLU": SwiGLU(CFG.dim, CFG.ffn_dim),
        "Block": Block(CFG),
    }


@pytest.mark.parametrize("name", ["RMSNorm", "LayerNorm", "SwiGLU", "Block"])
def test_wrong_last_dimension_is_a_value_error(name):
    with pytest.raises(ValueError, match=rf"{name}: last dimension of input shape \(1, 2, 63\) must be dim=64"):
        modules()[name](torch.randn(1, 2, 63))


@pytest.mark.parametrize("name", ["RMSNorm", "LayerNorm", "SwiGLU", "Block"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.complex64])
def test_integer_bool_and_complex_inputs_are_type_errors(name, dtype):
    x = torch.ones(1, 2, CFG.dim, dtype=dtype)
    with pytest.raises(TypeError, match=rf"{name}: dtype {dtype} is not supported"):
        modules()[name](x)


@pytest.mark.parametrize("name", ["RMSNorm", "SwiGLU", "Block"])
def test_non_tensor_input_is_a_type_error(name):
    with pytest.raises(TypeError, match="expected a torch.Tensor, got list"):
        modules()[name]([[1.0] * CFG.dim])


@pytest.mark.parametrize("name", ["RMSNorm", "SwiGLU", "Block"])
def test_input_weight_device_mismatch_is_a_value_error(name):
    x = torch.randn(1, 2, CFG.dim, device="meta")  # a second device that exists everywhere
    with pytest.raises(ValueError, match=rf"{name}: input is on meta but the weights are on cpu"):
        modules()[name](x)


def test_swiglu_dtype_mismatch_is_a_type_error():
    with pytest.raises(TypeError, match="SwiGLU: input dtype torch.float64 differs from the weights' torch.float32"):
        SwiGLU(CFG.dim, CFG.ffn_dim)(torch.randn(2, CFG.dim, dtype=torch.float64))


def test_rmsnorm_accepts_low_precision_input_with_fp32_weight_and_keeps_its_dtype():
    y = RMSNorm(CFG.dim)(torch.randn(3, CFG.dim, dtype=torch.bfloat16))
    assert y.dtype == torch.bfloat16


def test_sequence_longer_than_max_seq_len_is_a_value_error():
    x = torch.randn(1, CFG.max_seq_len + 1, CFG.dim)
    with pytest.raises(ValueError, match=r"Block: sequence length T=129 exceeds max_seq_len=128"):
        Block(CFG)(x)


@pytest.mark.parametrize("shape", [(CFG.dim,), (2, CFG.dim), (1, 2, 3, CFG.dim)])
def test_block_input_of_wrong_rank_is_a_value_error(shape):
    with pytest.raises(ValueError, match=r"must have rank 3 \(B, T, D\)"):
        Block(CFG)(torch.randn(*shape))


def test_zero_dim_input_is_a_value_error():
    with pytest.raises(ValueError, match="last dimension"):
        RMSNorm(CFG.dim)(torch.tensor(1.0))


@pytest.mark.parametrize("name", ["RMSNorm", "LayerNorm", "SwiGLU", "Block"])
def test_forward_never_modifies_its_input(name):
    x = torch.randn(2, 3, CFG.dim)
    before = x.clone()
    modules()[name](x)
    assert torch.equal(x, before)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: RMSNorm(0), ValueError, r"RMSNorm: dim=0 must be a positive int ≤ 2\*\*24"),
        (lambda: RMSNorm(2.5), TypeError, r"RMSNorm: dim=2.5 \(float\) must be an int"),
        (lambda: RMSNorm(True), TypeError, r"RMSNorm: dim=True \(bool\) must be an int"),
        (lambda: RMSNorm(64, float("nan")), ValueError, "RMSNorm: eps=nan must be finite"),
        (lambda: RMSNorm(64, -1e-6), ValueError, "RMSNorm: eps=-1e-06 must be finite and ≥ 0"),
        (lambda: RMSNorm(64, "1e-6"), TypeError, r"RMSNorm: eps='1e-6' \(str\) must be a real number"),
        (lambda: SwiGLU(0, 8), ValueError, "SwiGLU: dim=0 must be"),
        (lambda: SwiGLU(8, 0), ValueError, "SwiGLU: hidden_dim=0 must be"),
        (
            lambda: Block({"dim": 64}),
            TypeError,
            r"Block: config=\{'dim': 64\} \(dict\) must be a nanolm_core.config.ModelConfig",
        ),
    ],
)
def test_bad_constructor_arguments_name_the_argument_and_value(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_numpy_integers_and_reals_are_accepted_and_stored_as_python_numbers():
    norm = RMSNorm(np.int64(8), np.float32(0.5))
    assert (type(norm.dim), type(norm.eps), norm.eps) == (int, float, 0.5)


def test_valid_zero_size_batches_pass_through():
    assert RMSNorm(CFG.dim)(torch.randn(0, CFG.dim)).shape == (0, CFG.dim)
    assert Block(CFG)(torch.randn(2, 0, CFG.dim)).shape == (2, 0, CFG.dim)


@pytest.mark.parametrize("bad", [-1, CFG.vocab_size, 2**40])
def test_out_of_range_token_id_names_its_position_and_value(bad):
    tokens = torch.zeros(2, 5, dtype=torch.int64)
    tokens[1, 3] = bad
    with pytest.raises(ValueError, match=rf"Transformer: tokens\[1, 3\]={bad} is out of range \[0, vocab_size=256\)"):
        Transformer(CFG)(tokens)


@pytest.mark.parametrize(
    ("tokens", "error", "message"),
    [
        (torch.zeros(2, 5), TypeError, "dtype torch.float32 is not supported for tokens"),
        (torch.zeros(5, dtype=torch.int64), ValueError, r"tokens must have rank 2 \(B, T\), got shape \(5,\)"),
        (torch.zeros(1, 129, dtype=torch.int64), ValueError, "sequence length T=129 exceeds max_seq_len=128"),
        ([[1, 2]], TypeError, "expected a torch.Tensor, got list for tokens"),
    ],
)
def test_malformed_token_tensors_are_rejected_naming_tokens(tokens, error, message):
    with pytest.raises(error, match=message):
        Transformer(CFG)(tokens)
