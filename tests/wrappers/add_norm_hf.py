"""A user's AddRMSNorm for HF models: the residual added in the layer's dtype, then ``LlamaRMSNorm`` (fp32 statistic
and product, in fp64 layers too) — vLLM's unfused fallback with HF's norm."""

from tests.wrappers.hf_norms import LlamaRMSNorm


class AddRMSNorm(LlamaRMSNorm):
    def forward(self, x, residual):
        h = x + residual
        return super().forward(h), h
