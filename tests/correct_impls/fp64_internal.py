"""Correct and as accurate as it gets: each component evaluated in fp64 and rounded once to the input dtype."""

from typing import ClassVar

import torch

import nanolm_core


def _in_fp64(module: torch.nn.Module, cls: type, x: torch.Tensor, *args: object) -> torch.Tensor:
    params = {k: v.double() for k, v in module.named_parameters()}
    return torch.func.functional_call(_Shadow.get(cls, *args), params, (x.double(),)).to(x.dtype)


class _Shadow:
    cache: ClassVar[dict] = {}

    @classmethod
    def get(cls, kind: type, *args: object) -> torch.nn.Module:
        key = (kind, args)
        if key not in cls.cache:
            cls.cache[key] = kind(*args).double()
        return cls.cache[key]


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _in_fp64(self, nanolm_core.RMSNorm, x, self.dim, self.eps)


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _in_fp64(self, nanolm_core.SwiGLU, x, self.dim, self.hidden_dim)


class Block(nanolm_core.Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _in_fp64(self, nanolm_core.Block, x, self.config)
