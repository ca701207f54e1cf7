"""Layer 3 — the law library: the run-time context, the law table, strategies, assertions, the harness that
builds and calls a subject per the contract, and the laws themselves (``laws/``)."""
