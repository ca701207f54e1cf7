"""A wrong RMSNorm (output × 1.05) that returns a ``torch.Tensor`` subclass whose ``.to`` / ``.double`` /
``.float`` / ``.clone`` / ``.detach`` / ``.cpu`` / ``.contiguous`` show the right values: a verifier that reads the
output through them sees a correct module. A subclass is not the contract's output (a plain tensor): contract."""

import torch

import nanolm_core


class Liar(torch.Tensor):
    honest: torch.Tensor


for _name in ("to", "double", "float", "clone", "detach", "cpu", "contiguous"):
    setattr(Liar, _name, lambda self, *a, _n=_name, **k: getattr(self.honest, _n)(*a, **k))


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        honest = super().forward(x)
        out = (honest * 1.05).as_subclass(Liar)
        out.honest = honest
        return out
