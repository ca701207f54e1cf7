"""HF T5's RMSNorm as the contract's RMSNorm (``hf_norms``)."""

from tests.wrappers.hf_norms import T5LayerNorm as RMSNorm

__all__ = ["RMSNorm"]
