"""HF Qwen2's RMSNorm (Llama's code) as the contract's RMSNorm."""

from tests.wrappers.hf_norms import LlamaRMSNorm as RMSNorm

__all__ = ["RMSNorm"]
