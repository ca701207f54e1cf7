"""eps outside the square root: y = x / (rms + eps) ⊙ w (allenai/OLMo#281). Invisible at unit scale."""

import torch

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = x.double()
        return (xc / (xc.pow(2).mean(-1, keepdim=True).sqrt() + self.eps) * self.weight.double()).to(x.dtype)
