"""Layer 6 — entry points: the ``nanolm-verify`` command line and the pytest plugin."""
