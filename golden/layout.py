"""Where the stored corpus lives and what it holds, without importing torch (the command line's help uses it)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "FAMILIES", "MANIFEST"]

DATA_DIR = Path(__file__).parent / "data"
MANIFEST = "MANIFEST.json"
FAMILIES = ("rmsnorm", "swiglu", "block", "add_rmsnorm")
