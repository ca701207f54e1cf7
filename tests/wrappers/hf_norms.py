"""The RMSNorms of HF transformers as users copy them into a wrapper (no transformers import): each computes its
statistic in fp32 whatever the input dtype — fp64 layers included, where the contract computes in fp64.

- ``LlamaRMSNorm`` (Llama, Qwen2, Mistral, Granite: one code): x.to(fp32) normalised, rounded to the input
  dtype, times the weight — two roundings;
- ``OLMo2RMSNorm``: the weight applied in fp32, one rounding;
- ``T5LayerNorm``: the statistic of x.to(fp32), the product of the stored x with the fp32 rsqrt (fp64 layers:
  an fp64 output with an fp32 statistic), the weight in the input dtype;
- ``GemmaRMSNorm`` (Gemma, Gemma 3): the gain 1 + w formed in fp32 for the w = γ − 1 a user loads (from the
  contract's γ, in the input dtype), x.float() throughout, rounded once."""

import torch
from torch import nn


class _Norm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))


class LlamaRMSNorm(_Norm):
    def forward(self, x):
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class OLMo2RMSNorm(_Norm):
    def forward(self, x):
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * h).to(x.dtype)


class T5LayerNorm(_Norm):
    def forward(self, x):
        var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        h = x * torch.rsqrt(var + self.eps)
        if self.weight.dtype in (torch.float16, torch.bfloat16):
            h = h.to(self.weight.dtype)
        return self.weight * h


class GemmaRMSNorm(_Norm):
    def forward(self, x):
        w = self.weight - 1  # the checkpoint's w = γ − 1, stored in the module dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * (1.0 + w.float())).type_as(x)
