"""Course mistake: F = 4D with three matrices (1.5× the parameters of the 2-matrix FFN)."""

import nanolm_core
from nanolm_core import RMSNorm, SwiGLU


class Block(nanolm_core.Block):
    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__(config)
        self.ffn = SwiGLU(config.dim, 4 * config.dim)


__all__ = ["Block", "RMSNorm", "SwiGLU"]
