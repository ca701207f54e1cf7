"""F = 4D whenever the config did not give ffn_dim explicitly (the 2017 default kept by a port)."""

import nanolm_core


class Block(nanolm_core.Block):
    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__(config)
        if config.ffn_dim == nanolm_core.default_ffn_dim(config.dim, config.multiple_of):
            self.ffn = nanolm_core.SwiGLU(config.dim, 4 * config.dim)
