"""Layer 2 — one numerical truth: ULP and relative error (``ulp``), derived error bounds (``bounds``).

Dtype facts come from ``golden.formats``; nothing here knows about laws, Hypothesis or implementations.
"""
