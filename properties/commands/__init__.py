"""Layer 5 — what a user types: ``check``, ``compare``, baselines, ``pitfalls`` (teach) and ``plot``."""
