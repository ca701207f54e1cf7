"""Pitfall: ``nn.Linear``'s default bias — a SwiGLU with six tensors where the contract has three matrices.

The mistake: the three projections are built as ``nn.Linear(dim, hidden_dim)`` with the default
``bias=True``: 2F + D extra parameters, and extra ``*.bias`` entries in the state dict. Llama's MLP is
bias-free; the biases start at small random values, so the function is wrong from the first call.

Why people make it: ``bias=True`` is PyTorch's default and most tutorial MLPs use it; some Llama variants
*do* have MLP biases, so ports and converters switch them on and off by configuration.

Evidence: the bias / no-bias mismatch between Llama variants and their ports: huggingface/transformers#30031
(``mlp_bias`` added to LlamaConfig), mlc-ai/mlc-llm#3494 (biases silently dropped when biased checkpoints
meet bias-free code — the converse of this mistake).

Caught by: SwiGLU.swiglu_has_three_matrices_of_ffn_dim — exactly three bias-free matrices, 3·D·F parameters.
"""

from __future__ import annotations

from torch import nn

import nanolm_core

__all__ = ["SwiGLU"]


class SwiGLU(nanolm_core.SwiGLU):
    """WRONG: y = W_down (silu(W_gate x + b_g) ⊙ (W_up x + b_u)) + b_d — nn.Linear's default biases."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__(dim, hidden_dim)
        self.w_gate, self.w_up = nn.Linear(dim, hidden_dim), nn.Linear(dim, hidden_dim)  # the bug: bias=True
        self.w_down = nn.Linear(hidden_dim, dim)
