"""Layer 4 — loading and running: finding and importing implementations, profiles, the runner
(``run_law`` / ``run_check``) and expectation files."""
