"""HF OLMo2's RMSNorm as the contract's RMSNorm (``hf_norms``)."""

from tests.wrappers.hf_norms import OLMo2RMSNorm as RMSNorm

__all__ = ["RMSNorm"]
