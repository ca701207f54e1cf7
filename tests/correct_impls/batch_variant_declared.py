"""The catalogue's batch-variant RMSNorm (its reduction split by the batch size: accurate, but a row's last bits
depend on how many rows share the call), declaring it: ``batch_invariant: False``. The batch-invariance law then
measures and reports the variance instead of failing; every other law still judges it."""

from __future__ import annotations

from properties.gallery.batch_variant import RMSNorm

__all__ = ["CONVENTIONS", "RMSNorm"]

CONVENTIONS = {"RMSNorm": {"batch_invariant": False, "notes": "split-K chosen by the number of rows"}}
