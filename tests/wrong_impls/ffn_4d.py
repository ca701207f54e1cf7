"""F = 4D with three matrices, ignoring config.ffn_dim (1.5× the FFN parameters)."""

import nanolm_core


class Block(nanolm_core.Block):
    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__(config)
        self.ffn = nanolm_core.SwiGLU(config.dim, 4 * config.dim)
