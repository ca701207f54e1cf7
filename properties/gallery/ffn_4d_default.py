"""Pitfall: F = 4D whenever the config did not give ffn_dim explicitly — the 2017 default kept by a port.

The mistake: the block honours an explicit ``ffn_dim`` (Llama-3's 14336) but falls back to F = 4D when the
config leaves it to the default, instead of F = 256·⌈(8D/3)/256⌉ (D = 4096 → 11008).

Why people make it: a port from a GPT-2-style code base keeps its "hidden = 4·dim" default and adds an
override for the models that need one; the explicit configs everyone tests with look right.

Evidence: none known in this exact form; the same width confusion is epfLLM/Megatron-LLM#64 (see the
ffn_dim_4d pitfall). Kept as a test-only mutation.

Caught by: Block.block_ffn_dim_is_8d_over_3 — Block(config).ffn has F = config.ffn_dim hidden units.
"""

from __future__ import annotations

import nanolm_core

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """WRONG: ffn = SwiGLU(D, 4·D) unless the config set ffn_dim explicitly."""

    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__(config)
        if config.ffn_dim == nanolm_core.default_ffn_dim(config.dim, config.multiple_of):  # the bug: 4D default
            self.ffn = nanolm_core.SwiGLU(config.dim, 4 * config.dim)
