"""HF Llama's RMSNorm as the contract's RMSNorm (``hf_norms``)."""

from tests.wrappers.hf_norms import LlamaRMSNorm as RMSNorm

__all__ = ["RMSNorm"]
