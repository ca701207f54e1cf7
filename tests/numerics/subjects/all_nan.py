"""Every output value is NaN (shape, dtype, device and parameters per the contract): no law about values may pass.

The NaN is produced inside the computation (y · NaN), so gradients are NaN too.
"""

import torch

import nanolm_core


def _nan(y: torch.Tensor) -> torch.Tensor:
    return y * torch.tensor(float("nan"), dtype=y.dtype, device=y.device)


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _nan(super().forward(x))


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _nan(super().forward(x))


class Block(nanolm_core.Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _nan(super().forward(x))


class AddRMSNorm(nanolm_core.AddRMSNorm):
    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = super().forward(x, residual)
        return _nan(y), _nan(h)
