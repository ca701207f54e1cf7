"""Pitfall: F = 4D with three matrices — SwiGLU with 1.5× the FFN parameters.

The mistake: the Block builds its FFN as SwiGLU(D, 4·D), the 2017 ReLU FFN's width, instead of
F = 256·⌈(8D/3)/256⌉ (config.ffn_dim; D = 4096 → 11008). Three D×F matrices at F = 4D cost
12·D² instead of the ReLU FFN's 8·D²; F = 8D/3 is exactly what keeps the budget (3·D·F = 8·D²).

Why people make it: "the FFN is 4× wider" is the one number everyone remembers. And for small D
the 256-rounding makes the two coincide (D = 64 → F = 256 = 4D), so toy configs cannot see it.

Evidence: epfLLM/Megatron-LLM#64 (floor-to-64 gave 10880, not 11008); the course's
test_swiglu_ffn_dim_is_8D_over_3.

Caught by: Block.block_has_llama_parameter_count — on configs where 4D ≠ 256·⌈(8D/3)/256⌉.
"""

from __future__ import annotations

import nanolm_core
from nanolm_core.config import ModelConfig

__all__ = ["Block"]


class Block(nanolm_core.Block):
    """WRONG: the pre-norm block with ffn = SwiGLU(D, 4·D) instead of SwiGLU(D, config.ffn_dim)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.ffn = nanolm_core.SwiGLU(config.dim, 4 * config.dim)  # the bug: F = 4D
